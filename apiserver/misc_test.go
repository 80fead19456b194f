package apiserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/table"
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

func TestTableResponses(t *testing.T) {
	e := newEnv(t)
	e.mustCreate(testPod("default", "web-1", "n1", map[string]string{"app": "web"}))
	e.mustCreate(testPod("default", "web-2", "", map[string]string{"app": "web"}))

	code, hdr, body := e.do("GET", "/api/v1/namespaces/default/pods", adminToken, "", tableAccept, nil)
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("table list: %d %s", code, body)
	}
	var tbl metav1.Table
	if err := json.Unmarshal(body, &tbl); err != nil {
		t.Fatal(err)
	}
	if tbl.Kind != "Table" || tbl.APIVersion != "meta.k8s.io/v1" || tbl.ResourceVersion == "" {
		t.Fatalf("table type %+v", tbl.TypeMeta)
	}
	var names, wide []string
	for _, c := range tbl.ColumnDefinitions {
		if c.Priority == 0 {
			names = append(names, strings.ToUpper(c.Name))
		} else {
			wide = append(wide, strings.ToUpper(c.Name))
		}
	}
	if got := strings.Join(names, " "); got != "NAME READY STATUS RESTARTS AGE" {
		t.Fatalf("pod columns %q", got)
	}
	if got := strings.Join(wide, " "); !strings.HasPrefix(got, "IP NODE") {
		t.Fatalf("pod wide columns %q", got)
	}
	if len(tbl.Rows) != 2 || tbl.Rows[0].Cells[0] != "web-1" || tbl.Rows[0].Cells[1] != "0/1" || tbl.Rows[0].Cells[2] != "Pending" {
		t.Fatalf("rows %+v", tbl.Rows)
	}
	// The row object is the object's metadata by default, which kubectl
	// reads for the NAMESPACE column.
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(tbl.Rows[0].Object.Raw, &meta); err != nil || meta.Kind != "PartialObjectMetadata" || meta.Namespace != "default" {
		t.Fatalf("row object %s: %v", tbl.Rows[0].Object.Raw, err)
	}
	// The columns are package table's, the ones berth get prints.
	defs := table.Definitions(podKind)
	if len(defs) != len(tbl.ColumnDefinitions) {
		t.Fatalf("%d columns, table has %d", len(tbl.ColumnDefinitions), len(defs))
	}

	// One object, with the whole object in the row.
	code, _, body = e.do("GET", "/api/v1/namespaces/default/pods/web-1?includeObject=Object", adminToken, "", tableAccept, nil)
	if code != http.StatusOK {
		t.Fatalf("table get: %d %s", code, body)
	}
	tbl = metav1.Table{}
	if err := json.Unmarshal(body, &tbl); err != nil || len(tbl.Rows) != 1 || !strings.Contains(string(tbl.Rows[0].Object.Raw), `"containers"`) {
		t.Fatalf("table get: %v %s", err, body)
	}

	// Other kinds: nodes, deployments, sources, and NAME AGE for the rest.
	for _, tc := range []struct {
		path, columns string
	}{
		{"/api/v1/nodes", "NAME STATUS ROLES AGE VERSION"},
		{"/apis/apps/v1/namespaces/default/deployments", "NAME READY UP-TO-DATE AVAILABLE AGE"},
		{"/apis/apps/v1/namespaces/default/replicasets", "NAME DESIRED CURRENT READY AGE"},
		{"/api/v1/namespaces/default/services", "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE"},
		{"/apis/berth.dev/v1/sources", "NAME TYPE REVISION READY HEALTH MESSAGE"},
	} {
		code, _, body := e.do("GET", tc.path, adminToken, "", tableAccept, nil)
		tbl := metav1.Table{}
		if err := json.Unmarshal(body, &tbl); err != nil || code != http.StatusOK {
			t.Fatalf("%s: %d %v", tc.path, code, err)
		}
		var names []string
		for _, c := range tbl.ColumnDefinitions {
			if c.Priority == 0 {
				names = append(names, strings.ToUpper(c.Name))
			}
		}
		if got := strings.Join(names, " "); got != tc.columns {
			t.Errorf("%s: columns %q, want %q", tc.path, got, tc.columns)
		}
	}
	// An Ingress not served yet has an empty ADDRESS cell, as in
	// Kubernetes' Table (kubectl prints nothing there), not <none>.
	e.mustCreate(&api.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}})
	code, _, body = e.do("GET", "/apis/networking.k8s.io/v1/namespaces/default/ingresses", adminToken, "", tableAccept, nil)
	tbl = metav1.Table{}
	if err := json.Unmarshal(body, &tbl); err != nil || code != http.StatusOK || len(tbl.Rows) != 1 {
		t.Fatalf("ingress table: %d %v %s", code, err, body)
	}
	var cells []string
	for _, c := range tbl.Rows[0].Cells {
		cells = append(cells, fmt.Sprint(c))
	}
	// NAME CLASS HOSTS ADDRESS PORTS AGE
	if got := strings.Join(cells[:5], "|"); got != "shop|<none>|*||80" {
		t.Errorf("ingress row %q, want shop|<none>|*||80", got)
	}

	// An Accept the server cannot meet is a 406.
	code, _, body = e.do("GET", "/api/v1/namespaces/default/pods", adminToken, "", "application/vnd.kubernetes.protobuf", nil)
	status(t, code, body, http.StatusNotAcceptable)
}

func TestDiscovery(t *testing.T) {
	e := newEnv(t)
	get := func(path, accept string) (http.Header, []byte) {
		code, hdr, body := e.do("GET", path, adminToken, "", accept, nil)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		return hdr, body
	}
	_, body := get("/api", "")
	var versions metav1.APIVersions
	if err := json.Unmarshal(body, &versions); err != nil || versions.Kind != "APIVersions" || len(versions.Versions) != 1 || versions.Versions[0] != "v1" {
		t.Fatalf("/api: %v %s", err, body)
	}
	_, body = get("/apis", "")
	var groups metav1.APIGroupList
	if err := json.Unmarshal(body, &groups); err != nil {
		t.Fatal(err)
	}
	var gnames []string
	for _, g := range groups.Groups {
		gnames = append(gnames, g.Name+"/"+g.PreferredVersion.Version)
	}
	if got := strings.Join(gnames, " "); got != "apps/v1 storage.k8s.io/v1 scheduling.k8s.io/v1 coordination.k8s.io/v1 discovery.k8s.io/v1 policy/v1 networking.k8s.io/v1 batch/v1 autoscaling/v2 berth.dev/v1 rbac.authorization.k8s.io/v1 admissionregistration.k8s.io/v1 apiextensions.k8s.io/v1 authentication.k8s.io/v1 authorization.k8s.io/v1 metrics.k8s.io/v1beta1" {
		t.Fatalf("groups %q", got)
	}
	// The reviews kubectl auth sends are there, to be created only.
	_, body = get("/apis/authorization.k8s.io/v1", "")
	if !contains(string(body), `"name":"selfsubjectaccessreviews"`, `"kind":"SelfSubjectAccessReview"`, `"verbs":["create"]`) {
		t.Fatalf("/apis/authorization.k8s.io/v1: %s", body)
	}
	// So are the resource metrics kubectl top reads, to be read only.
	_, body = get("/apis/metrics.k8s.io/v1beta1", "")
	if !contains(string(body), `"name":"pods","singularName":"","namespaced":true,"kind":"PodMetrics","verbs":["get","list"]`, `"name":"nodes"`) {
		t.Fatalf("/apis/metrics.k8s.io/v1beta1: %s", body)
	}
	_, body = get("/api/v1", "")
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	res := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		res[r.Name] = r
	}
	pods, status := res["pods"], res["pods/status"]
	if pods.Kind != "Pod" || !pods.Namespaced || pods.SingularName != "pod" || strings.Join(pods.ShortNames, ",") != "po" ||
		!strings.Contains(strings.Join(pods.Verbs, ","), "watch") || strings.Join(pods.Categories, ",") != "all" {
		t.Fatalf("pods resource %+v", pods)
	}
	if status.Kind != "Pod" || strings.Join(status.Verbs, ",") != "get,patch,update" {
		t.Fatalf("pods/status %+v", status)
	}
	if _, ok := res["configmaps/status"]; ok {
		t.Fatal("configmaps have no status subresource")
	}
	if nodes := res["nodes"]; nodes.Namespaced {
		t.Fatal("nodes are cluster-scoped")
	}
	_, body = get("/apis/apps/v1", "")
	if !strings.Contains(string(body), `"deployments"`) || !strings.Contains(string(body), `"groupVersion":"apps/v1"`) {
		t.Fatalf("/apis/apps/v1: %s", body)
	}
	_, body = get("/apis/apps", "")
	if !strings.Contains(string(body), `"kind":"APIGroup"`) {
		t.Fatalf("/apis/apps: %s", body)
	}

	// Aggregated discovery, as kubectl asks for it first.
	const aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
	hdr, body := get("/apis", aggregated)
	if ct := hdr.Get("Content-Type"); ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
		t.Fatalf("aggregated content type %q", ct)
	}
	if !contains(string(body), `"kind":"APIGroupDiscoveryList"`, `"resource":"deployments"`, `"scope":"Namespaced"`, `"subresource":"status"`) {
		t.Fatalf("aggregated /apis: %s", body)
	}
	_, body = get("/api", aggregated)
	if !contains(string(body), `"resource":"pods"`, `"singularResource":"pod"`) {
		t.Fatalf("aggregated /api: %s", body)
	}
	code, _, body := e.do("GET", "/apis/nope/v1", adminToken, "", "", nil)
	if code != http.StatusNotFound {
		t.Fatalf("unknown group: %d %s", code, body)
	}
}

func TestHealthAndVersion(t *testing.T) {
	failing := errors.New("source fleet has not synced")
	var mu sync.Mutex
	check := func() error {
		mu.Lock()
		defer mu.Unlock()
		return failing
	}
	e := newEnv(t, withConfig(func(c *apiserver.Config) {
		c.ReadyChecks = []apiserver.ReadyCheck{{Name: "store", Check: func() error { return nil }}, {Name: "sources", Check: check}}
	}))
	code, _, body := e.do("GET", "/readyz?verbose", "", "", "", nil)
	if code != http.StatusInternalServerError || !contains(string(body), "[+]store ok", "[-]sources failed: source fleet has not synced") {
		t.Fatalf("readyz failing: %d %s", code, body)
	}
	mu.Lock()
	failing = nil
	mu.Unlock()
	code, _, body = e.do("GET", "/readyz?verbose", "", "", "", nil)
	if code != http.StatusOK || !contains(string(body), "[+]store ok", "[+]sources ok", "readyz check passed") {
		t.Fatalf("readyz passing: %d %s", code, body)
	}
	if code, _, body = e.do("GET", "/readyz", "", "", "", nil); code != http.StatusOK || string(body) != "ok" {
		t.Fatalf("readyz: %d %s", code, body)
	}
	if code, _, body = e.do("GET", "/livez", "", "", "", nil); code != http.StatusOK || string(body) != "ok" {
		t.Fatalf("livez: %d %s", code, body)
	}
	code, _, body = e.do("GET", "/version", "", "", "", nil)
	var v version.Info
	if err := json.Unmarshal(body, &v); err != nil || code != http.StatusOK || v.Major != "1" || v.Minor != "37" || v.GitVersion != "v1.37.2+berth.0.3.1" || v.GitCommit != "abc123" || v.Platform == "" {
		t.Fatalf("version: %d %s", code, body)
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mustCreate(configMap("a"))
	if _, _, err := e.client.List(ctx, cmKind, "default", client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Get(ctx, cmKind, "default", "missing"); !client.IsNotFound(err) {
		t.Fatal(err)
	}
	w, err := e.client.Watch(ctx, cmKind, "default", client.WatchOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expectEvent(t, w, client.Added, "a")
	_, _, body := e.do("GET", "/metrics", "", "", "", nil)
	text := string(body)
	for _, want := range []string{
		`berth_apiserver_requests_total{code="201",resource="configmaps",verb="create"} 1`,
		`berth_apiserver_requests_total{code="200",resource="configmaps",verb="list"} 1`,
		`berth_apiserver_requests_total{code="404",resource="configmaps",verb="get"} 1`,
		`berth_apiserver_request_duration_seconds_bucket{resource="configmaps",verb="list",le="+Inf"} 1`,
		`berth_apiserver_watches{resource="configmaps"} 1`,
		`berth_store_revision `,
		`berth_build_info{commit="abc123",goversion="go`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

// blockingAdmission holds creates until released, so that a test can
// keep requests in flight.
type blockingAdmission struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingAdmission) Admit(ctx context.Context, a auth.Attributes, _ *auth.Identity) error {
	if a.Verb != auth.VerbCreate || a.Kind.Resource != "configmaps" {
		return nil
	}
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return nil
}

func TestInflightCapPerIdentity(t *testing.T) {
	block := &blockingAdmission{entered: make(chan struct{}, 4), release: make(chan struct{})}
	e := newEnv(t, withConfig(func(c *apiserver.Config) {
		c.MaxInflightPerIdentity = 2
		c.Admission = []apiserver.AdmissionPlugin{block}
	}))
	ctx := context.Background()
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := e.client.Create(ctx, configMap(fmt.Sprintf("c%d", i)))
			errs <- err
		}()
	}
	<-block.entered
	<-block.entered
	// The admin is at its cap: a third request is told to come back.
	code, hdr, body := e.do("GET", "/api/v1/namespaces/default/configmaps", adminToken, "", "", nil)
	st := status(t, code, body, http.StatusTooManyRequests)
	if hdr.Get("Retry-After") != "1" || st.Details == nil || st.Details.RetryAfterSeconds != 1 {
		t.Fatalf("429 without Retry-After: %v %+v", hdr, st)
	}
	// Another identity is not held back, and watches do not count.
	if _, _, err := e.clientFor(readerToken).List(ctx, cmKind, "default", client.ListOptions{}); err != nil {
		t.Fatalf("reader: %v", err)
	}
	w, err := e.client.Watch(ctx, cmKind, "default", client.WatchOptions{})
	if err != nil {
		t.Fatalf("watch at the cap: %v", err)
	}
	w.Stop()
	close(block.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := e.client.List(ctx, cmKind, "default", client.ListOptions{}); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

func TestAdmissionRefusal(t *testing.T) {
	quota := apiserver.AdmissionFunc(func(_ context.Context, a auth.Attributes, _ *auth.Identity) error {
		if a.Verb == auth.VerbCreate && a.Kind.Resource == "configmaps" {
			return errors.New(`exceeded quota: compute, requested: configmaps=1, used: configmaps=2, limited: configmaps=2`)
		}
		return nil
	})
	e := newEnv(t, withConfig(func(c *apiserver.Config) { c.Admission = []apiserver.AdmissionPlugin{quota} }))
	_, err := e.client.Create(context.Background(), configMap("a"))
	if !client.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("admission refusal: %v", err)
	}
}

func TestExtraRoutesAndPanics(t *testing.T) {
	e := newEnv(t)
	e.server.Handle("/hooks/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}), false)
	e.server.Handle("/boom", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("kaboom") }), true)
	var seen *auth.Identity
	e.server.HandleSubresource(podKind, "log", func(w http.ResponseWriter, r *http.Request, obj api.Object) {
		seen, _ = auth.IdentityFromContext(r.Context())
		fmt.Fprintf(w, "logs of %s\n", obj.GetName())
	})
	if code, _, _ := e.do("POST", "/hooks/fleet", "", "", "", nil); code != http.StatusAccepted {
		t.Fatalf("hook: %d", code)
	}
	code, _, body := e.do("GET", "/boom", adminToken, "", "", nil)
	status(t, code, body, http.StatusInternalServerError)
	if code, _, _ := e.do("GET", "/boom", "", "", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("authenticated route without token: %d", code)
	}
	e.mustCreate(testPod("default", "p", "n1", nil))
	code, _, body = e.do("GET", "/api/v1/namespaces/default/pods/p/log", adminToken, "", "", nil)
	if code != http.StatusOK || string(body) != "logs of p\n" || seen == nil || seen.Name != "admin" {
		t.Fatalf("log subresource: %d %s %v", code, body, seen)
	}
	code, _, body = e.do("GET", "/api/v1/namespaces/default/pods/missing/log", adminToken, "", "", nil)
	status(t, code, body, http.StatusNotFound)
	code, _, body = e.do("GET", "/api/v1/namespaces/default/pods/p/exec", adminToken, "", "", nil)
	status(t, code, body, http.StatusNotFound)
}

// TestExecIsCreate: a pods/exec, pods/attach or pods/portforward request
// is authorized as create whatever its method, as Kubernetes authorizes
// it: a WebSocket's handshake is a GET, and who may read pods may not run
// commands in them or attach to them.
func TestExecIsCreate(t *testing.T) {
	e := newEnv(t, withRealAuth())
	called := 0
	subs := []string{"exec", "attach", "portforward"}
	for _, sub := range subs {
		e.server.HandleSubresource(podKind, sub, func(w http.ResponseWriter, r *http.Request, obj api.Object) {
			called++
			w.WriteHeader(http.StatusNoContent)
		})
	}
	e.mustCreate(testPod("default", "p", "n1", nil))
	cred, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range subs {
		for _, method := range []string{"GET", "POST"} {
			code, _, body := e.do(method, "/api/v1/namespaces/default/pods/p/"+sub+"?command=true", cred, "", "", nil)
			if code != http.StatusForbidden || !strings.Contains(string(body), `cannot create resource \"pods/`+sub+`\"`) {
				t.Errorf("node %s %s: %d %s", method, sub, code, body)
			}
			code, _, body = e.do(method, "/api/v1/namespaces/default/pods/p/"+sub+"?command=true", adminToken, "", "", nil)
			if code != http.StatusNoContent {
				t.Errorf("admin %s %s: %d %s", method, sub, code, body)
			}
		}
	}
	if called != 2*len(subs) {
		t.Errorf("the handlers ran %d times, want %d (the admin's)", called, 2*len(subs))
	}
}

// TestNodePolicyEndToEnd serves with berth's own authenticator and policy:
// a node's credential reaches its own pods through the field selector and
// their status, and nothing of another node's.
func TestNodePolicyEndToEnd(t *testing.T) {
	e := newEnv(t, withRealAuth())
	ctx := context.Background()
	e.mustCreate(testPod("default", "mine", "n1", nil))
	e.mustCreate(testPod("default", "theirs", "n2", nil))
	cred, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	node := e.clientFor(cred)
	items, _, err := node.List(ctx, podKind, "", client.ListOptions{FieldSelector: "spec.nodeName=n1"})
	if err != nil || len(items) != 1 || items[0].GetName() != "mine" {
		t.Fatalf("own pods: %v %v", err, items)
	}
	// Every pod is read, for the service proxy's NetworkPolicy peers.
	if items, _, err := node.List(ctx, podKind, "", client.ListOptions{}); err != nil || len(items) != 2 {
		t.Fatalf("all pods: %v %v", err, items)
	}
	w, err := node.Watch(ctx, podKind, "", client.WatchOptions{ListOptions: client.ListOptions{FieldSelector: "spec.nodeName=n1"}})
	if err != nil {
		t.Fatalf("watch own pods: %v", err)
	}
	expectEvent(t, w, client.Added, "mine")
	w.Stop()
	if _, err := node.PatchStatus(ctx, podKind, "default", "mine", []byte(`{"status":{"phase":"Running"}}`)); err != nil {
		t.Fatalf("own pod status: %v", err)
	}
	_, err = node.PatchStatus(ctx, podKind, "default", "theirs", []byte(`{"status":{"phase":"Running"}}`))
	if !client.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:node:n1" cannot patch resource "pods/status"`) {
		t.Fatalf("other node's pod status: %v", err)
	}
	if _, err := node.Get(ctx, podKind, "default", "theirs"); !client.IsForbidden(err) {
		t.Fatalf("other node's pod: %v", err)
	}
	// The admin token of the real authenticator works, and a bad one is 401.
	if _, _, err := e.client.List(ctx, podKind, "", client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.clientFor("nope").List(ctx, podKind, "", client.ListOptions{}); !client.IsUnauthorized(err) {
		t.Fatalf("bad token: %v", err)
	}
}

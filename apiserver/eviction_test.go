package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var budgetKind = kind("poddisruptionbudgets")

// evictionEnv is a server with berth's own policy, nodes n1 and n2, and
// the running pods web-0 and web-1 (app=web) on n1 and db-0 (app=db) on n2.
type evictionEnv struct {
	*env
	node1 string // n1's token
}

func newEvictionEnv(t *testing.T) *evictionEnv {
	e := newEnv(t, withRealAuth())
	tok, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	ee := &evictionEnv{env: e, node1: tok}
	ee.runningPod("web-0", "n1", "web", true)
	ee.runningPod("web-1", "n1", "web", true)
	ee.runningPod("db-0", "n2", "db", true)
	return ee
}

// runningPod stores a pod Running on node, ready or not.
func (e *evictionEnv) runningPod(name, node, app string, ready bool) {
	e.t.Helper()
	p := testPod("default", name, node, map[string]string{"app": app})
	status := api.ConditionFalse
	if ready {
		status = api.ConditionTrue
	}
	p.Status = api.PodStatus{Phase: api.PodRunning, Conditions: []api.PodCondition{{Type: api.PodReady, Status: status}}}
	if _, err := e.store.Create(context.Background(), p); err != nil {
		e.t.Fatal(err)
	}
}

// budget stores a budget for app with the status the disruption
// controller would have counted (at the current generation).
func (e *evictionEnv) budget(name, app string, status api.PodDisruptionBudgetStatus, change func(*api.PodDisruptionBudget)) {
	e.t.Helper()
	two := intstr.FromInt32(2)
	b := &api.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: api.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	status.ObservedGeneration = 1
	b.Status = status
	if change != nil {
		change(b)
	}
	if _, err := e.store.Create(context.Background(), b); err != nil {
		e.t.Fatal(err)
	}
}

func (e *evictionEnv) evict(token, pod, body string) (int, http.Header, []byte) {
	e.t.Helper()
	if body == "" {
		body = `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + pod + `","namespace":"default"}}`
	}
	return e.do(http.MethodPost, "/api/v1/namespaces/default/pods/"+pod+"/eviction", token, "application/json", "", strings.NewReader(body))
}

func (e *evictionEnv) pod(name string) *api.Pod {
	e.t.Helper()
	o, err := e.store.Get(podKind, "default", name)
	if err != nil {
		return nil
	}
	return o.(*api.Pod)
}

func (e *evictionEnv) getBudget(name string) *api.PodDisruptionBudget {
	e.t.Helper()
	o, err := e.store.Get(budgetKind, "default", name)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.(*api.PodDisruptionBudget)
}

func succeeded(t *testing.T, code int, body []byte) {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || code != http.StatusCreated || st.Status != metav1.StatusSuccess || st.Kind != "Status" {
		t.Fatalf("eviction answered %d %s", code, body)
	}
}

// evicted reports whether the pod is gone or being deleted.
func (e *evictionEnv) evicted(name string) bool {
	p := e.pod(name)
	return p == nil || p.DeletionTimestamp != nil
}

// An allowed eviction spends one disruption, records the pod, and
// deletes it, in one write.
func TestEvictionAllowed(t *testing.T) {
	e := newEvictionEnv(t)
	e.budget("web", "web", api.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3}, nil)
	code, _, body := e.evict(adminToken, "web-0", "")
	succeeded(t, code, body)
	if !e.evicted("web-0") {
		t.Fatal("web-0 was not deleted")
	}
	b := e.getBudget("web")
	if b.Status.DisruptionsAllowed != 0 {
		t.Fatalf("disruptionsAllowed %d, want 0", b.Status.DisruptionsAllowed)
	}
	if _, ok := b.Status.DisruptedPods["web-0"]; !ok {
		t.Fatalf("disruptedPods %v lacks web-0", b.Status.DisruptedPods)
	}
	if c := apimeta.FindStatusCondition(b.Status.Conditions, api.DisruptionAllowedCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != api.InsufficientPodsReason {
		t.Fatalf("condition %+v", c)
	}
	// The budget is spent: the next eviction is refused.
	code, _, body = e.evict(adminToken, "web-1", "")
	status(t, code, body, http.StatusTooManyRequests)
	if e.evicted("web-1") {
		t.Fatal("web-1 went beyond the budget")
	}
}

// A refused eviction is Kubernetes' 429, with the budget's cause, and
// changes nothing.
func TestEvictionRefused(t *testing.T) {
	e := newEvictionEnv(t)
	e.budget("web", "web", api.PodDisruptionBudgetStatus{CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2}, nil)
	rev := e.store.Revision()
	code, h, body := e.evict(adminToken, "web-0", "")
	st := status(t, code, body, http.StatusTooManyRequests)
	if st.Message != "Cannot evict pod as it would violate the pod's disruption budget." || st.Reason != metav1.StatusReasonTooManyRequests {
		t.Fatalf("message %q reason %q", st.Message, st.Reason)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != "DisruptionBudget" ||
		st.Details.Causes[0].Message != "The disruption budget web needs 2 healthy pods and has 2 currently" {
		t.Fatalf("details %+v", st.Details)
	}
	if h.Get("Retry-After") != "" {
		t.Fatalf("Retry-After %q on a spent budget", h.Get("Retry-After"))
	}
	if e.store.Revision() != rev || e.evicted("web-0") {
		t.Fatal("a refused eviction wrote")
	}
	// A budget not yet counted for its spec asks the client to come back.
	e.budget("db", "db", api.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}, func(b *api.PodDisruptionBudget) { b.Status.ObservedGeneration = 0 })
	code, h, body = e.evict(adminToken, "db-0", "")
	st = status(t, code, body, http.StatusTooManyRequests)
	if h.Get("Retry-After") != "10" || st.Details.Causes[0].Message != "The disruption budget db is still being processed by the server." {
		t.Fatalf("Retry-After %q, details %+v", h.Get("Retry-After"), st.Details)
	}
}

// Two budgets over one pod are Kubernetes' 500; a pod with none goes.
func TestEvictionBudgetCount(t *testing.T) {
	e := newEvictionEnv(t)
	e.budget("web", "web", api.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}, nil)
	e.budget("everything", "", api.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}, func(b *api.PodDisruptionBudget) {
		b.Spec.Selector = &metav1.LabelSelector{} // policy/v1: every pod
	})
	code, _, body := e.evict(adminToken, "web-0", "")
	st := status(t, code, body, http.StatusInternalServerError)
	if st.Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Fatalf("message %q", st.Message)
	}
	if e.evicted("web-0") {
		t.Fatal("web-0 went")
	}
	e.runningPod("lone", "n1", "lone", true)
	if _, err := e.client.Delete(context.Background(), budgetKind, "default", "everything", nil); err != nil {
		t.Fatal(err)
	}
	code, _, body = e.evict(adminToken, "lone", "")
	succeeded(t, code, body)
	if !e.evicted("lone") {
		t.Fatal("a pod no budget guards was not evicted")
	}
}

// Pods that are not ready go as their budget's policy says, without
// spending it.
func TestEvictionUnhealthyPods(t *testing.T) {
	e := newEvictionEnv(t)
	e.runningPod("web-sick", "n1", "web", false)
	// IfHealthyBudget, with the budget short of healthy pods: refused.
	e.budget("web", "web", api.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 2, ExpectedPods: 3}, nil)
	code, _, body := e.evict(adminToken, "web-sick", "")
	status(t, code, body, http.StatusTooManyRequests)

	// AlwaysAllow: the unready pod goes, the budget unspent.
	b := e.getBudget("web")
	policy := api.AlwaysAllow
	b.Spec.UnhealthyPodEvictionPolicy = &policy
	b.Status.ObservedGeneration = 2
	if _, err := e.store.Update(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	code, _, body = e.evict(adminToken, "web-sick", "")
	succeeded(t, code, body)
	if b := e.getBudget("web"); !e.evicted("web-sick") || len(b.Status.DisruptedPods) != 0 {
		t.Fatalf("evicted %v, disrupted %v", e.evicted("web-sick"), b.Status.DisruptedPods)
	}

	// IfHealthyBudget with the healthy pods there: the unready pod goes.
	e.runningPod("db-sick", "n2", "db", false)
	e.budget("db", "db", api.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 2}, nil)
	code, _, body = e.evict(adminToken, "db-sick", "")
	succeeded(t, code, body)
	if !e.evicted("db-sick") || e.getBudget("db").Status.DisruptedPods != nil {
		t.Fatal("db-sick was not evicted, or spent the budget")
	}
}

// Pending and finished pods, and pods already being deleted, go without
// a look at their budget, as in Kubernetes: losing them disrupts nothing
// more. The budget here refuses every other pod of web, ready or not.
func TestEvictionWithoutBudgetCheck(t *testing.T) {
	e := newEvictionEnv(t)
	e.budget("web", "web", api.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 2, ExpectedPods: 3}, nil)
	e.runningPod("web-sick", "n1", "web", false)
	for _, name := range []string{"web-1", "web-sick"} {
		code, _, body := e.evict(adminToken, name, "")
		status(t, code, body, http.StatusTooManyRequests)
	}
	phases := map[string]api.PodPhase{"web-pending": api.PodPending, "web-done": api.PodSucceeded, "web-failed": api.PodFailed}
	for name, phase := range phases {
		p := testPod("default", name, "n1", map[string]string{"app": "web"})
		p.Status.Phase = phase
		if _, err := e.store.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	// web-0 runs, ready, on n1: deleted, it terminates for its grace period.
	if _, err := e.store.Delete(context.Background(), podKind, "default", "web-0", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := e.pod("web-0"); p == nil || p.DeletionTimestamp == nil || !p.Ready() {
		t.Fatalf("web-0 is not a ready pod being deleted: %+v", p)
	}
	rv := e.getBudget("web").ResourceVersion
	for _, name := range append(slices.Sorted(maps.Keys(phases)), "web-0") {
		code, _, body := e.evict(adminToken, name, "")
		if code != http.StatusCreated {
			t.Errorf("eviction of %s: %d %s", name, code, body)
		} else if !e.evicted(name) {
			t.Errorf("%s was not evicted", name)
		}
	}
	if b := e.getBudget("web"); b.ResourceVersion != rv {
		t.Errorf("the budget was spent: %+v", b.Status)
	}
}

// A dry run checks everything and keeps nothing; bodies are read
// strictly.
func TestEvictionDryRunAndBodies(t *testing.T) {
	e := newEvictionEnv(t)
	e.budget("web", "web", api.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3}, nil)
	rev := e.store.Revision()
	for _, body := range []string{
		`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0"},"deleteOptions":{"dryRun":["All"]}}`,
		`{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"web-0"},"deleteOptions":{"dryRun":["All"]}}`,
	} {
		code, _, out := e.evict(adminToken, "web-0", body)
		succeeded(t, code, out)
	}
	code, _, out := e.do(http.MethodPost, "/api/v1/namespaces/default/pods/web-0/eviction?dryRun=All", adminToken, "application/json", "",
		strings.NewReader(`{"metadata":{"name":"web-0"}}`))
	succeeded(t, code, out)
	if e.store.Revision() != rev || e.evicted("web-0") {
		t.Fatal("a dry run wrote")
	}
	for _, tc := range []struct{ body, want string }{
		{`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-1"}}`, "name in URL does not match name in Eviction object"},
		{`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0","namespace":"kube-system"}}`, "the namespace of the provided object does not match"},
		{`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0"},"spec":{}}`, `unknown field "spec"`},
		{`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0"},"deleteOptions":{"gracePeriod":1}}`, `unknown field "deleteOptions.gracePeriod"`},
		{`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0"},"deleteOptions":{"gracePeriodSeconds":"soon"}}`, "gracePeriodSeconds"},
		{`{"apiVersion":"v1","kind":"Eviction","metadata":{"name":"web-0"}}`, `apiVersion: Unsupported value: "v1"`},
		{`{"apiVersion":"policy/v1","kind":"Pod","metadata":{"name":"web-0"}}`, `kind: Unsupported value: "Pod"`},
		{`{"metadata":{"name":"web-0"},"deleteOptions":{"dryRun":["Some"]}}`, `dryRun: Unsupported value: "Some"`},
		{`{"metadata":{"name":"web-0"},"deleteOptions":{"propagationPolicy":"Never"}}`, `propagationPolicy must be`},
	} {
		code, _, out := e.evict(adminToken, "web-0", tc.body)
		if st := status(t, code, out, http.StatusBadRequest); !strings.Contains(st.Message, tc.want) {
			t.Errorf("%s: message %q, want %q", tc.body, st.Message, tc.want)
		}
	}
	code, _, out = e.do(http.MethodPost, "/api/v1/namespaces/default/pods/web-0/eviction?dryRun=All", adminToken, "application/json", "",
		strings.NewReader(`{"metadata":{"name":"web-0"},"deleteOptions":{"dryRun":["Nope"]}}`))
	status(t, code, out, http.StatusBadRequest)
	if e.store.Revision() != rev || e.evicted("web-0") {
		t.Fatal("a bad eviction wrote")
	}
}

// A node evicts the pods bound to it and no other; a missing pod is 404;
// the subresource takes POST alone.
func TestEvictionByNode(t *testing.T) {
	e := newEvictionEnv(t)
	code, _, body := e.evict(e.node1, "db-0", "")
	if st := status(t, code, body, http.StatusForbidden); !strings.Contains(st.Message, "node n1 can only evict pods with spec.nodeName set to itself") {
		t.Fatalf("message %q", st.Message)
	}
	code, _, body = e.evict(e.node1, "web-0", "")
	succeeded(t, code, body)
	code, _, body = e.evict(adminToken, "nope", "")
	status(t, code, body, http.StatusNotFound)
	code, _, body = e.do(http.MethodGet, "/api/v1/namespaces/default/pods/web-1/eviction", adminToken, "", "", nil)
	status(t, code, body, http.StatusMethodNotAllowed)
}

// Discovery lists pods/eviction with the group and version kubectl drain
// sends its Eviction in.
func TestEvictionDiscovery(t *testing.T) {
	e := newEnv(t)
	_, _, body := e.do(http.MethodGet, "/api/v1", adminToken, "", "", nil)
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range list.APIResources {
		if r.Name == "pods/eviction" {
			found = r.Group == "policy" && r.Version == "v1" && r.Kind == "Eviction" && len(r.Verbs) == 1 && r.Verbs[0] == "create"
		}
	}
	if !found {
		t.Fatalf("/api/v1 lists no pods/eviction of policy/v1: %s", body)
	}
	_, _, body = e.do(http.MethodGet, "/api", adminToken, "", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", nil)
	if !contains(string(body), `"subresource":"eviction","responseKind":{"group":"policy","version":"v1","kind":"Eviction"},"verbs":["create"]`) {
		t.Fatalf("aggregated discovery lacks pods/eviction: %s", body)
	}
}

// kubectl's typed client sends the Eviction as protobuf, of the version
// discovery names or the older one.
func TestEvictionProtobuf(t *testing.T) {
	e := newEvictionEnv(t)
	zero := int64(0)
	body := protobufBody(t, &policyv1beta1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &zero}}, "policy/v1beta1", "Eviction")
	code, _, out := e.do(http.MethodPost, "/api/v1/namespaces/default/pods/web-0/eviction", adminToken, "application/vnd.kubernetes.protobuf", "", bytes.NewReader(body))
	succeeded(t, code, out)
	if e.pod("web-0") != nil {
		t.Fatal("web-0 is still there after an eviction with grace 0")
	}
}

// An eviction is timed in the request latencies, as the write it is, not
// left out as a log stream is.
func TestEvictionTimed(t *testing.T) {
	e := newEvictionEnv(t)
	code, _, out := e.evict(adminToken, "web-0", "")
	succeeded(t, code, out)
	_, _, body := e.do(http.MethodGet, "/metrics", "", "", "", nil)
	if want := `berth_apiserver_request_duration_seconds_count{resource="pods/eviction",verb="create"} 1`; !strings.Contains(string(body), want) {
		t.Fatalf("/metrics lacks %s:\n%s", want, body)
	}
}

// A YAML body is read as strictly as JSON.
func TestEvictionYAML(t *testing.T) {
	e := newEvictionEnv(t)
	post := func(body string) (int, []byte) {
		code, _, out := e.do(http.MethodPost, "/api/v1/namespaces/default/pods/web-0/eviction", adminToken, "application/yaml", "", strings.NewReader(body))
		return code, out
	}
	code, out := post("apiVersion: policy/v1\nkind: Eviction\nmetadata: {name: web-0}\nmetadata: {name: web-1}\n")
	if st := status(t, code, out, http.StatusBadRequest); !strings.Contains(st.Message, `"metadata"`) {
		t.Fatalf("a repeated key: %q", st.Message)
	}
	code, out = post("apiVersion: policy/v1\nkind: Eviction\nmetadata: {name: web-0}\ndeleteOptions: {gracePeriodSeconds: 0}\n")
	succeeded(t, code, out)
	if e.pod("web-0") != nil {
		t.Fatal("web-0 is still there")
	}
}

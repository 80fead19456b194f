package apiserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// listPage is what the tests read of a list.
type listPage struct {
	Metadata metav1.ListMeta `json:"metadata"`
	Items    []struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	} `json:"items"`
}

func (p listPage) names() []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it.Metadata.Name)
	}
	return out
}

func (e *env) list(t *testing.T, path string, q url.Values) (int, listPage, []byte) {
	t.Helper()
	code, _, body := e.do("GET", path+"?"+q.Encode(), adminToken, "", "", nil)
	var p listPage
	if code == http.StatusOK {
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("list %s: %v: %s", q.Encode(), err, body)
		}
	}
	return code, p, body
}

// Every page of a list comes from the snapshot its first page was read
// from: objects created or deleted meanwhile change nothing of it.
func TestListPages(t *testing.T) {
	e := newEnv(t)
	e.mustCreate(&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("cm%d", i)
		e.mustCreate(configMap(name))
		want = append(want, name)
	}
	other := configMap("elsewhere")
	other.Namespace = "other"
	e.mustCreate(other)

	const path = "/api/v1/namespaces/default/configmaps"
	var got []string
	q := url.Values{"limit": {"2"}}
	rv := ""
	for i := 0; ; i++ {
		code, p, body := e.list(t, path, q)
		if code != http.StatusOK {
			t.Fatalf("page %d: %d %s", i, code, body)
		}
		if len(p.Items) > 2 {
			t.Fatalf("page %d has %d items, limit 2", i, len(p.Items))
		}
		if rv == "" {
			rv = p.Metadata.ResourceVersion
		} else if p.Metadata.ResourceVersion != rv {
			t.Fatalf("page %d at resourceVersion %s, first page at %s", i, p.Metadata.ResourceVersion, rv)
		}
		got = append(got, p.names()...)
		if p.Metadata.Continue == "" {
			if p.Metadata.RemainingItemCount != nil {
				t.Fatalf("last page says %d remain", *p.Metadata.RemainingItemCount)
			}
			break
		}
		if r := p.Metadata.RemainingItemCount; r == nil || int(*r) != len(want)-len(got) {
			t.Fatalf("page %d: remainingItemCount %v, want %d", i, r, len(want)-len(got))
		}
		if i == 0 {
			// Changes after the first page are not in the list.
			e.mustCreate(configMap("cm9"))
			if _, err := e.client.Delete(context.Background(), cmKind, "default", "cm6", nil); err != nil {
				t.Fatal(err)
			}
		}
		q = url.Values{"limit": {"2"}, "continue": {p.Metadata.Continue}}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged list %v, want %v", got, want)
	}

	// Across namespaces, and with a field selector on an index.
	code, p, body := e.list(t, "/api/v1/configmaps", url.Values{"limit": {"1"}})
	if code != http.StatusOK || len(p.Items) != 1 || p.Metadata.Continue == "" {
		t.Fatalf("all namespaces, limit 1: %d %s", code, body)
	}
	for _, pod := range []string{"p1", "p2", "p3"} {
		e.mustCreate(testPod("default", pod, "n1", nil))
	}
	e.mustCreate(testPod("default", "p0", "n2", nil))
	var pods []string
	q = url.Values{"limit": {"1"}, "fieldSelector": {"spec.nodeName=n1"}}
	for range 5 {
		code, p, body := e.list(t, "/api/v1/namespaces/default/pods", q)
		if code != http.StatusOK {
			t.Fatalf("pods: %d %s", code, body)
		}
		pods = append(pods, p.names()...)
		if p.Metadata.Continue == "" {
			break
		}
		q.Set("continue", p.Metadata.Continue)
	}
	if !slices.Equal(pods, []string{"p1", "p2", "p3"}) {
		t.Fatalf("pods on n1, a page at a time: %v", pods)
	}

	// A Table (kubectl get) pages too.
	code, _, body = e.do("GET", path+"?limit=2", adminToken, "", tableAccept, nil)
	var table metav1.Table
	if err := json.Unmarshal(body, &table); code != http.StatusOK || err != nil {
		t.Fatalf("table page: %d %v %s", code, err, body)
	}
	if len(table.Rows) != 2 || table.Continue == "" || table.RemainingItemCount == nil || *table.RemainingItemCount != 5 {
		t.Fatalf("table page: %d rows, continue %q, remaining %v", len(table.Rows), table.Continue, table.RemainingItemCount)
	}
}

func token(v string, rv int64, start string) string {
	data, _ := json.Marshal(map[string]any{"v": v, "rv": rv, "start": start})
	return base64.RawURLEncoding.EncodeToString(data)
}

// A continue token the server did not make, or made for another list, is
// a 400, never a list.
func TestListBadContinue(t *testing.T) {
	e := newEnv(t)
	e.mustCreate(configMap("a"))
	e.mustCreate(configMap("b"))
	const path = "/api/v1/namespaces/default/configmaps"
	_, first, _ := e.list(t, path, url.Values{"limit": {"1"}})
	for name, q := range map[string]url.Values{
		"garbage":          {"continue": {"garbage!!"}},
		"not json":         {"continue": {base64.RawURLEncoding.EncodeToString([]byte("nope"))}},
		"other version":    {"continue": {token("meta.k8s.io/v2", 5, "default/a\x00")}},
		"zero revision":    {"continue": {token("meta.k8s.io/v1", 0, "default/a\x00")}},
		"bad revision":     {"continue": {token("meta.k8s.io/v1", -7, "default/a\x00")}},
		"no start":         {"continue": {token("meta.k8s.io/v1", 5, "")}},
		"other namespace":  {"continue": {token("meta.k8s.io/v1", 5, "kube-system/a\x00")}},
		"too long":         {"continue": {strings.Repeat("A", 5000)}},
		"resourceVersion":  {"continue": {first.Metadata.Continue}, "resourceVersion": {"3"}},
		"match":            {"continue": {first.Metadata.Continue}, "resourceVersionMatch": {"NotOlderThan"}},
		"limit not number": {"limit": {"two"}},
	} {
		code, _, body := e.list(t, path, q)
		st := status(t, code, body, http.StatusBadRequest)
		if strings.Contains(name, "o") && q.Get("continue") != "" && q.Get("resourceVersion") == "" && q.Get("resourceVersionMatch") == "" &&
			!strings.Contains(st.Message, "continue key is not valid") {
			t.Errorf("%s: message %q", name, st.Message)
		}
	}
}

// A token whose snapshot the server no longer keeps is 410 Gone, with a
// token that lists the rest from the newest revision, as Kubernetes
// answers one etcd has compacted.
func TestListContinueTooOld(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	e := newEnv(t, withClock(fc))
	for _, n := range []string{"a", "b", "c"} {
		e.mustCreate(configMap(n))
	}
	const path = "/api/v1/namespaces/default/configmaps"
	_, first, _ := e.list(t, path, url.Values{"limit": {"1"}})
	e.mustCreate(configMap("d")) // the snapshot is no longer the newest
	fc.Step(4 * time.Minute)
	code, second, body := e.list(t, path, url.Values{"limit": {"1"}, "continue": {first.Metadata.Continue}})
	if code != http.StatusOK || !slices.Equal(second.names(), []string{"b"}) {
		t.Fatalf("second page within the snapshot's life: %d %s", code, body)
	}
	// Exact lists read a kept snapshot too.
	code, exact, body := e.list(t, path, url.Values{"resourceVersion": {first.Metadata.ResourceVersion}, "resourceVersionMatch": {"Exact"}})
	if code != http.StatusOK || !slices.Equal(exact.names(), []string{"a", "b", "c"}) {
		t.Fatalf("exact list at a kept revision: %d %s", code, body)
	}
	fc.Step(6 * time.Minute)
	code, _, body = e.list(t, path, url.Values{"limit": {"1"}, "continue": {second.Metadata.Continue}})
	st := status(t, code, body, http.StatusGone)
	if st.Reason != metav1.StatusReasonExpired || !strings.Contains(st.Message, "The provided continue parameter is too old") || st.Continue == "" {
		t.Fatalf("410: %+v", st)
	}
	code, rest, body := e.list(t, path, url.Values{"continue": {st.Continue}})
	if code != http.StatusOK || !slices.Equal(rest.names(), []string{"c", "d"}) {
		t.Fatalf("the rest from the newest revision: %d %s", code, body)
	}
}

// restConfig is a client-go configuration for the test server.
func (e *env) restConfig() *rest.Config {
	return &rest.Config{Host: e.ts.URL, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{CAData: e.caPEM}}
}

// queryRecorder records the query of every list request.
type queryRecorder struct {
	mu      sync.Mutex
	queries []url.Values
}

func (qr *queryRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/configmaps") {
			qr.mu.Lock()
			qr.queries = append(qr.queries, r.URL.Query())
			qr.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (qr *queryRecorder) pages() (n int, continued int) {
	qr.mu.Lock()
	defer qr.mu.Unlock()
	for _, q := range qr.queries {
		n++
		if q.Get("continue") != "" {
			continued++
		}
	}
	return n, continued
}

// client-go's pager lists page by page.
func TestListClientGoPager(t *testing.T) {
	qr := &queryRecorder{}
	e := newEnv(t, withWrap(qr.wrap))
	for i := range 5 {
		e.mustCreate(configMap(fmt.Sprintf("cm%d", i)))
	}
	cs, err := corev1client.NewForConfig(e.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return cs.ConfigMaps("default").List(ctx, opts)
	})
	p.PageSize = 2
	var names []string
	err = p.EachListItem(context.Background(), metav1.ListOptions{}, func(o runtime.Object) error {
		names = append(names, o.(*corev1.ConfigMap).Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"cm0", "cm1", "cm2", "cm3", "cm4"}) {
		t.Fatalf("pager listed %v", names)
	}
	if n, continued := qr.pages(); n != 3 || continued != 2 {
		t.Fatalf("pager made %d requests, %d with continue; want 3 and 2", n, continued)
	}
}

// kubectl get --chunk-size pages.
func TestListKubectlChunks(t *testing.T) {
	kubectl := testtool.Need(t, "kubectl")
	qr := &queryRecorder{}
	e := newEnv(t, withWrap(qr.wrap))
	for i := range 5 {
		e.mustCreate(configMap(fmt.Sprintf("cm%d", i)))
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, e.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: u, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
`, e.ts.URL, ca, adminToken)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-o", "name"}, {}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "get", "configmaps", "--chunk-size=2"}, args...)...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("kubectl get %v: %v\n%s", args, err, out)
		}
		for i := range 5 {
			if !strings.Contains(string(out), fmt.Sprintf("cm%d", i)) {
				t.Fatalf("kubectl get %v lists no cm%d:\n%s", args, i, out)
			}
		}
	}
	if n, continued := qr.pages(); n < 6 || continued < 4 {
		t.Fatalf("kubectl made %d list requests, %d with continue: it did not page", n, continued)
	}
}

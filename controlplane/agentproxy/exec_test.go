package agentproxy

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

func execTestPods() (one, multi *api.Pod) {
	one = &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	one.Spec.NodeName = "n1"
	one.Spec.Containers = []api.Container{{Name: "app"}}
	multi = &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "multi"}}
	multi.Spec.NodeName = "n1"
	multi.Spec.Containers = []api.Container{{Name: "a"}, {Name: "b"}}
	multi.Spec.InitContainers = []api.Container{{Name: "setup"}}
	return one, multi
}

// TestParsePodExecQuery: the command and streams pass on to the agent as
// kubectl sends them; a missing command, no stream, an unknown option or
// container, and a pod of several containers with none named are 400s.
func TestParsePodExecQuery(t *testing.T) {
	one, multi := execTestPods()
	req, err := parsePodExecQuery(one, url.Values{"command": {"sh", "-c", "echo a b"}, "stdin": {"true"}, "stdout": {"true"}, "stderr": {"false"}, "tty": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	if req.container != "app" || !slices.Equal(req.query["command"], []string{"sh", "-c", "echo a b"}) ||
		req.query.Get("stdin") != "true" || req.query.Get("stdout") != "true" || req.query.Has("stderr") || req.query.Get("tty") != "true" {
		t.Errorf("request %+v", req)
	}
	if req, err := parsePodExecQuery(multi, url.Values{"command": {"true"}, "stdout": {"true"}, "container": {"b"}}); err != nil || req.container != "b" {
		t.Errorf("named container: %+v, %v", req, err)
	}
	for _, tc := range []struct {
		pod  *api.Pod
		q    url.Values
		want string
	}{
		{one, url.Values{"stdout": {"true"}}, "specify a command"},
		{one, url.Values{"command": {""}, "stdout": {"true"}}, "specify a command"},
		{one, url.Values{"command": {"true"}}, "at least 1 of stdin, stdout, stderr"},
		{one, url.Values{"command": {"true"}, "tty": {"true"}}, "at least 1 of stdin, stdout, stderr"},
		{one, url.Values{"command": {"true"}, "stdout": {"yes"}}, "stdout"},
		{one, url.Values{"command": {"true"}, "stdout": {"true"}, "user": {"root"}}, "exec option user"},
		{one, url.Values{"command": {"true"}, "stdout": {"true"}, "container": {"nope"}}, "container nope is not valid"},
		{multi, url.Values{"command": {"true"}, "stdout": {"true"}}, "a container name must be specified"},
	} {
		_, err := parsePodExecQuery(tc.pod, tc.q)
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a 400 with %q", tc.q, err, tc.want)
		}
	}
}

// FuzzPodExecQuery sends the pods/exec query parser arbitrary query
// strings (fuzzStreamQuery); what it accepts has a command, which
// survives the agent URL.
func FuzzPodExecQuery(f *testing.F) {
	fuzzStreamQuery(f, []string{
		"", "command=ls&stdout=true", "command=sh&command=-c&command=echo+hi&stdin=true&stdout=true&stderr=true",
		"command=true&tty=true&stdin=1", "command=true&stdout=yes", "command=true&container=b&stdout=true",
		"command=true&container=%2F..%2Fetc&stdout=true", "command=&stdout=true", "command=%00&stdout=true", "%zz", "&&",
	}, parsePodExecQuery, api.ContainerExecPath, func(t *testing.T, raw string, req podStreamRequest, agent *url.URL) {
		if cmd := req.query["command"]; len(cmd) == 0 || cmd[0] == "" {
			t.Fatalf("%q: no command in %v", raw, req.query)
		}
		back, err := url.ParseQuery(agent.RawQuery)
		if err != nil || !slices.Equal(back["command"], req.query["command"]) {
			t.Fatalf("%q: the command did not survive the agent URL: %s", raw, agent)
		}
	})
}

// fuzzStreamQuery sends parse, the query parser of pods/exec or
// pods/attach, arbitrary query strings for a pod of one container and one
// of several: it must never panic; a refusal is a 400; what it accepts
// names a container of the pod and a stream, and agentURL puts it on the
// node's address under path without changing the path; check looks at
// the rest.
func fuzzStreamQuery(f *testing.F, seeds []string, parse func(*api.Pod, url.Values) (podStreamRequest, error), path string,
	check func(t *testing.T, raw string, req podStreamRequest, agent *url.URL)) {
	for _, seed := range seeds {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	proxy := &Proxy{store: storeWithNode(f)}
	one, multi := execTestPods()
	f.Fuzz(func(t *testing.T, raw string, several bool) {
		pod, names := one, []string{"app"}
		if several {
			pod, names = multi, []string{"a", "b", "setup"}
		}
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		req, err := parse(pod, q)
		if err != nil {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("%q: %v is not a 400", raw, err)
			}
			return
		}
		if !slices.Contains(names, req.container) {
			t.Fatalf("%q: container %q", raw, req.container)
		}
		if req.query.Get("stdin") == "" && req.query.Get("stdout") == "" && req.query.Get("stderr") == "" {
			t.Fatalf("%q: no stream in %v", raw, req.query)
		}
		if req.query.Has("tty") && req.query.Has("stderr") {
			t.Fatalf("%q: stderr on a terminal in %v", raw, req.query)
		}
		u, err := proxy.agentURL(pod, path, req.container, req.query)
		if err != nil {
			t.Fatalf("%q: agent URL: %v", raw, err)
		}
		if want := path + "/default/" + pod.Name + "/" + req.container; u.Path != want || u.Host != "10.0.0.1:10250" {
			t.Fatalf("%q: agent URL %s", raw, u)
		}
		check(t, raw, req, u)
	})
}

// TestParsePodAttachQuery: the streams pass on to the agent as kubectl
// sends them, without the container, chosen as for an exec; no stream,
// an option attach does not take, or an unknown container are 400s.
func TestParsePodAttachQuery(t *testing.T) {
	one, multi := execTestPods()
	req, err := parsePodAttachQuery(one, url.Values{"stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}, "tty": {"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if req.container != "app" || req.query.Encode() != "stdin=true&stdout=true&tty=true" {
		t.Errorf("request %+v", req)
	}
	if req, err := parsePodAttachQuery(multi, url.Values{"stdout": {"true"}, "container": {"setup"}}); err != nil || req.container != "setup" || req.query.Has("container") {
		t.Errorf("named container: %+v, %v", req, err)
	}
	for _, tc := range []struct {
		pod  *api.Pod
		q    url.Values
		want string
	}{
		{one, url.Values{}, "at least 1 of stdin, stdout, stderr"},
		{one, url.Values{"stderr": {"true"}, "tty": {"true"}}, "at least 1 of stdin, stdout, stderr"},
		{one, url.Values{"stdout": {"true"}, "command": {"sh"}}, "attach option command"},
		{one, url.Values{"stdout": {"true"}, "container": {"nope"}}, "container nope is not valid"},
		{multi, url.Values{"stdout": {"true"}}, "a container name must be specified"},
	} {
		_, err := parsePodAttachQuery(tc.pod, tc.q)
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a 400 with %q", tc.q, err, tc.want)
		}
	}
}

// FuzzPodAttachQuery sends the pods/attach query parser arbitrary query
// strings (fuzzStreamQuery); what it accepts the agent reads back as the
// same streams.
func FuzzPodAttachQuery(f *testing.F) {
	fuzzStreamQuery(f, []string{
		"", "stdout=true", "stdin=true&stdout=true&stderr=true", "stdin=1&tty=true", "stderr=true&tty=1",
		"container=b&stdout=true", "container=%2F..%2Fetc&stdout=true", "command=ls&stdout=true", "%zz", "&&",
	}, parsePodAttachQuery, api.ContainerAttachPath, func(t *testing.T, raw string, req podStreamRequest, agent *url.URL) {
		if back, err := api.ParsePodAttachOptions(mustQuery(t, agent.RawQuery), false); err != nil || back.Query().Encode() != req.query.Encode() {
			t.Fatalf("%q: the agent reads %s as %+v, %v", raw, agent, back, err)
		}
	})
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestServeExecPassesSPDYOn: a request without a WebSocket upgrade (as
// kubectl's SPDY fallback asks) is refused for the pod's own faults, and
// otherwise goes on to the agent as a WebSocket would: kubectl shows only
// the fallback's answer, so an agent that cannot be reached must be named
// there with the cause, not hidden behind a refusal of SPDY.
func TestServeExecPassesSPDYOn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := l.Addr().(*net.TCPAddr)
	l.Close()
	p := New(storeWithNodeAt(t, gone.IP.String(), gone.Port), x509.NewCertPool(), tls.Certificate{}, nil)
	defer p.Close()
	one, _ := execTestPods()
	unbound := one.DeepCopy()
	unbound.Spec.NodeName = ""
	running := one.DeepCopy()
	running.Status.Phase = api.PodRunning
	done := one.DeepCopy()
	done.Status.Phase = api.PodSucceeded
	unreachable := "node n1: the agent at " + gone.String() + " cannot be reached"
	for _, tc := range []struct {
		sub   string
		serve func(http.ResponseWriter, *http.Request, api.Object)
		pod   *api.Pod
		code  int
		want  string
	}{
		{"exec?command=true&stdout=true", p.ServeExec, one, http.StatusServiceUnavailable, unreachable},
		{"exec?command=true&stdout=true", p.ServeExec, unbound, http.StatusBadRequest, "does not have a host assigned"},
		{"attach?stdin=true&stdout=true", p.ServeAttach, one, http.StatusServiceUnavailable, unreachable},
		{"attach?stdout=true", p.ServeAttach, unbound, http.StatusBadRequest, "does not have a host assigned"},
		{"attach?stdout=true", p.ServeAttach, done, http.StatusBadRequest, "cannot attach a container in a completed pod; current phase is Succeeded"},
		{"attach?stdout=true&container=nope", p.ServeAttach, one, http.StatusBadRequest, "container nope is not valid for pod web"},
		{"portforward", p.ServePortForward, running, http.StatusServiceUnavailable, unreachable},
		{"portforward", p.ServePortForward, one, http.StatusBadRequest, "pod is not running"},
	} {
		rec := httptest.NewRecorder()
		r, _ := http.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods/web/"+tc.sub, nil)
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "SPDY/3.1")
		tc.serve(rec, r, tc.pod)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s of %s: %d %s, want %d with %q", tc.sub, tc.pod.Name, rec.Code, rec.Body.String(), tc.code, tc.want)
		}
	}
}

// storeWithNode is a store holding node n1, whose agent listens at
// 10.0.0.1:10250.
func storeWithNode(tb testing.TB) *store.Store {
	tb.Helper()
	return storeWithNodeAt(tb, "10.0.0.1", 10250)
}

// storeWithNodeAt is a store holding node n1, whose agent listens at
// ip:port.
func storeWithNodeAt(tb testing.TB, ip string, port int) *store.Store {
	tb.Helper()
	st, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node.Status.Addresses = []api.NodeAddress{{Type: api.NodeInternalIP, Address: ip}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	api.Default(node)
	if _, err := st.Create(tb.Context(), node); err != nil {
		tb.Fatal(err)
	}
	return st
}

package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/server"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/testtool"
)

// proxyFixture is a real control plane and a log server that joined it as
// node n1 and serves pods web (container app) and multi (a and b).
type proxyFixture struct {
	cp *controlplane.Server
	// stop shuts the control plane down and returns what Run returned.
	stop  func() error
	admin *client.Client
	node  *client.Client
	rt    *logFileRuntime
	// ended receives how each of the runtime's log streams ended.
	ended chan error
	web   runtime.ID
}

func startProxyFixture(t *testing.T) *proxyFixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cp, err := controlplane.New(ctx, controlplane.Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", Store: controlplane.StoreMemory,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cp.Run(ctx) }()
	var stopOnce sync.Once
	var runErr error
	stop := func() error {
		stopOnce.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("control plane: %v", err)
		}
	})
	creds := cp.Credentials()
	newClient := func(token string) *client.Client {
		c, err := client.New(&client.Config{Server: "https://" + cp.Addr().String(), Token: token, CAData: creds.CAPEM})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	f := &proxyFixture{cp: cp, stop: stop, admin: newClient(creds.AdminToken), rt: newLogFileRuntime(t), ended: make(chan error, 16)}
	nodes, _ := api.LookupResource("namespaces")
	testtool.WaitFor(t, 10*time.Second, "the API server", func() error {
		_, err := f.admin.Get(ctx, nodes, "", api.NamespaceDefault)
		return err
	})

	// Join as the agent does, for a serving certificate of 127.0.0.1.
	joined, err := newClient(creds.NodeToken).Join(ctx, api.JoinRequest{NodeName: "n1", Addresses: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	f.node = newClient(joined.Token)
	tlsConfig, err := server.TLSConfig([]byte(joined.ServingCertificate), []byte(joined.ServingKey), creds.CAPool)
	if err != nil {
		t.Fatal(err)
	}
	f.web = runtime.ID{PodUID: "web-uid", Name: "app", Attempt: 0}
	f.rt.start(t, f.web, "hello\nfrom web\n")
	a := runtime.ID{PodUID: "multi-uid", Name: "a"}
	b := runtime.ID{PodUID: "multi-uid", Name: "b"}
	f.rt.start(t, a, "I am a\n")
	f.rt.start(t, b, "I am b\n")
	runs := map[string]runtime.ID{"default/web/app": f.web, "default/multi/a": a, "default/multi/b": b}
	lookup := func(ns, pod, ctr string, previous bool) (runtime.ID, error) {
		id, ok := runs[ns+"/"+pod+"/"+ctr]
		if !ok || previous {
			return runtime.ID{}, fmt.Errorf("no run of container %s: %w", ctr, runtime.ErrNotFound)
		}
		return id, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:   server.New(server.Options{Runtime: &logEndRecorder{logFileRuntime: f.rt, ended: f.ended}, Lookup: lookup, ClientCAs: creds.CAPool}),
		TLSConfig: tlsConfig,
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("log server: %v", err)
		}
	})

	// The agent's port, and a port where nothing listens for node n2.
	port := l.Addr().(*net.TCPAddr).Port
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	f.createNode(t, "n1", "127.0.0.1", port)
	f.createNode(t, "n2", "127.0.0.1", deadPort)
	f.createNode(t, "n3", "", port)
	// n4 reports n1's address: its agent would be n1's.
	f.createNode(t, "n4", "127.0.0.1", port)
	f.createPod(t, "web", "n1", "app")
	f.createPod(t, "multi", "n1", "a", "b")
	f.createPod(t, "pending", "", "app")
	f.createPod(t, "lost", "n2", "app")
	f.createPod(t, "nowhere", "n3", "app")
	f.createPod(t, "orphan", "gone", "app")
	f.createPod(t, "imposter", "n4", "app")
	return f
}

func (f *proxyFixture) createNode(t *testing.T, name, ip string, port int) {
	t.Helper()
	n := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if ip != "" {
		n.Status.Addresses = []api.NodeAddress{{Type: api.NodeHostName, Address: name}, {Type: api.NodeInternalIP, Address: ip}}
	}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	api.Default(n)
	if _, err := f.cp.Store().Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func (f *proxyFixture) createPod(t *testing.T, name, node string, containers ...string) {
	t.Helper()
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: api.NamespaceDefault, UID: types.UID("uid-" + name)}}
	p.Spec.NodeName = node
	// Nothing may schedule the unbound pod while the test runs.
	p.Spec.NodeSelector = map[string]string{"berth.dev/test": "no-such-node"}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: c, Image: "busybox", Command: []string{"true"}})
	}
	api.Default(p)
	if _, err := f.cp.Store().Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// proxyLogs asks the API server for a pod's log; the error is the client's
// *apierrors.StatusError for an answer that is not 200.
func proxyLogs(ctx context.Context, c *client.Client, pod string, query url.Values) (string, error) {
	resp, err := c.Do(ctx, http.MethodGet, "/api/v1/namespaces/default/pods/"+pod+"/log", query, nil, "")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestLogProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	f := startProxyFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, pod string
		query     url.Values
		body      string
		code      int
		message   string
	}{
		{name: "only container", pod: "web", body: "hello\nfrom web\n"},
		{name: "named container", pod: "web", query: url.Values{"container": {"app"}}, body: "hello\nfrom web\n"},
		{name: "tail", pod: "web", query: url.Values{"tailLines": {"1"}}, body: "from web\n"},
		{name: "timestamps false", pod: "web", query: url.Values{"timestamps": {"false"}}, body: "hello\nfrom web\n"},
		{name: "one of several", pod: "multi", query: url.Values{"container": {"b"}}, body: "I am b\n"},
		{name: "several, none named", pod: "multi", code: 400,
			message: "a container name must be specified for pod multi, choose one of: [a b]"},
		{name: "no such container", pod: "web", query: url.Values{"container": {"db"}}, code: 400, message: "container db is not valid for pod web"},
		{name: "no previous run", pod: "web", query: url.Values{"previous": {"true"}}, code: 404, message: "no run of container app"},
		{name: "unsupported option", pod: "web", query: url.Values{"stream": {"All"}}, code: 400, message: "log option stream is not supported"},
		{name: "timestamps of a log without times", pod: "web", query: url.Values{"timestamps": {"true"}}, code: 400, message: "write times were not kept"},
		{name: "since, of a log without times", pod: "web", query: url.Values{"sinceSeconds": {"10"}}, code: 400, message: "write times were not kept"},
		{name: "followed, with timestamps, of a log without times", pod: "web", query: url.Values{"follow": {"true"}, "timestamps": {"true"}}, code: 400, message: "write times were not kept"},
		{name: "bad tail", pod: "web", query: url.Values{"tailLines": {"x"}}, code: 400, message: `tailLines="x"`},
		{name: "not bound", pod: "pending", code: 400, message: "pod pending does not have a host assigned"},
		{name: "agent unreachable", pod: "lost", code: 503, message: "node n2: the agent at 127.0.0.1:"},
		{name: "node without address", pod: "nowhere", code: 503, message: "node n3 reports no InternalIP address"},
		{name: "node gone", pod: "orphan", code: 503, message: "node gone of pod orphan does not exist"},
		{name: "another node's agent", pod: "imposter", code: 502, message: `presented the certificate of "system:node:n1", not "system:node:n4"`},
		{name: "no such pod", pod: "nope", code: 404, message: `pods "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := proxyLogs(ctx, f.admin, tc.pod, tc.query)
			if tc.code == 0 {
				if err != nil || body != tc.body {
					t.Errorf("got %q, %v; want %q", body, err, tc.body)
				}
				return
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != int32(tc.code) || !strings.Contains(se.ErrStatus.Message, tc.message) {
				t.Errorf("got %q, %v; want a %d Status containing %q", body, err, tc.code, tc.message)
			}
		})
	}

	// A node may not read logs, even of its own pods.
	if _, err := proxyLogs(ctx, f.node, "web", nil); client.Code(err) != http.StatusForbidden {
		t.Errorf("node reading logs: %v, want 403", err)
	}
}

func TestLogProxyFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	f := startProxyFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A followed log shows what is written as it is written, and ends
	// when the run exits.
	resp, err := f.admin.Do(ctx, http.MethodGet, "/api/v1/namespaces/default/pods/web/log", url.Values{"follow": {"true"}, "tailLines": {"1"}}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	readLine := func(want string) {
		t.Helper()
		got, err := r.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	readLine("from web\n")
	f.rt.write(t, f.web, "more\n")
	readLine("more\n")
	f.rt.exit(f.web)
	rest, err := io.ReadAll(r)
	resp.Body.Close()
	if err != nil || len(rest) != 0 {
		t.Errorf("after the run exited: %q, %v; want the end", rest, err)
	}
	if err := <-f.ended; err != nil {
		t.Errorf("the agent's stream ended with %v", err)
	}
}

func TestLogProxyFollowCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	f := startProxyFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := f.admin.Do(ctx, http.MethodGet, "/api/v1/namespaces/default/pods/web/log", url.Values{"follow": {"true"}}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// The user goes away: the API server's request to the agent ends, and
	// with it the runtime's stream.
	cancel()
	resp.Body.Close()
	select {
	case err := <-f.ended:
		if err == nil {
			t.Error("the agent's stream ended as if the run had exited")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's stream went on after the user went away")
	}
}

// TestLogProxyFollowAtShutdown checks that a followed log does not hold
// the control plane's shutdown up: the stream ends and Run returns.
func TestLogProxyFollowAtShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	f := startProxyFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := f.admin.Do(ctx, http.MethodGet, "/api/v1/namespaces/default/pods/web/log", url.Values{"follow": {"true"}}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.stop() }()
	if rest, err := io.ReadAll(r); err != nil {
		t.Errorf("the stream ended with %v after %q, want its end", err, rest)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("control plane: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the control plane did not stop")
	}
}

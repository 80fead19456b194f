package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/exec"
	"github.com/berth-dev/berth/agent/server"
	"github.com/berth-dev/berth/api"
	"github.com/gorilla/websocket"
)

// serveExecRuntime runs argv (with env, and as each change makes it) as
// container default/web/app under the exec runtime, and serves it from a
// container server on a real TLS listener.
func serveExecRuntime(t *testing.T, argv, env []string, change ...func(*runtime.Container)) *logFixture {
	t.Helper()
	return serveExecRuntimeOn(t, nil, argv, env, change...)
}

// serveExecRuntimeOn is serveExecRuntime with the container server on clk
// (the real clock when nil).
func serveExecRuntimeOn(t *testing.T, clk clock.Clock, argv, env []string, change ...func(*runtime.Container)) *logFixture {
	t.Helper()
	rt, err := exec.New(exec.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	id := runtime.ID{PodUID: "uid-exec", Name: "app"}
	c := &runtime.Container{ID: id, PodNamespace: "default", PodName: "web", Argv: argv, Env: env}
	for _, f := range change {
		f(c)
	}
	if _, err := rt.Start(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rt.Stop(context.Background(), id, time.Second)
		_ = rt.Remove(context.Background(), id)
	})
	return startContainerServer(t, server.Options{Runtime: rt, Clock: clk,
		Lookup: func(ns, pod, ctr string, previous bool) (runtime.ID, error) {
			if ns != "default" || pod != "web" {
				return runtime.ID{}, runtime.ErrNotFound
			}
			if ctr != "app" || previous {
				return runtime.ID{}, fmt.Errorf("container %s is not valid for pod %s/%s", ctr, ns, pod)
			}
			return id, nil
		}})
}

// startContainerServer serves opts on a real TLS listener with the serving
// certificate of node n1, trusting the clients of a new test CA.
func startContainerServer(t *testing.T, opts server.Options) *logFixture {
	t.Helper()
	ca := newLogTestCA(t)
	certPEM, keyPEM := ca.issue(t, "system:node:n1", x509.ExtKeyUsageServerAuth)
	cfg, err := server.TLSConfig(certPEM, keyPEM, ca.pool)
	if err != nil {
		t.Fatal(err)
	}
	opts.ClientCAs = ca.pool
	srv := httptest.NewUnstartedServer(server.New(opts))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &logFixture{ca: ca, srv: srv}
}

// execFixture is a container server in front of one running container,
// default/web/app, under the exec runtime.
type execFixture struct{ *logFixture }

func newExecFixture(t *testing.T) execFixture {
	return execFixture{serveExecRuntime(t, []string{"/bin/sh", "-c", "while :; do sleep 0.05; done"}, []string{"GREETING=hello", "PATH=/usr/bin:/bin"})}
}

// Kubernetes' clients of the streaming protocols: over a WebSocket, as
// kubectl speaks it first, and over SPDY, its fallback.
const (
	overWebSocket = "WebSocket"
	overSPDY      = "SPDY"
)

// stream speaks to path?q through Kubernetes' own WebSocket client, as
// kubectl exec and attach do, presenting the API server's certificate.
func (f *logFixture) stream(t *testing.T, ctx context.Context, path string, q url.Values, opts remotecommand.StreamOptions) error {
	t.Helper()
	return f.streamOver(t, ctx, overWebSocket, path, q, opts)
}

// streamOver is stream over protocol: overWebSocket or overSPDY.
func (f *logFixture) streamOver(t *testing.T, ctx context.Context, protocol, path string, q url.Values, opts remotecommand.StreamOptions) error {
	t.Helper()
	certPEM, keyPEM := f.ca.issue(t, api.APIServerClientName, x509.ExtKeyUsageClientAuth)
	cfg := &rest.Config{Host: f.srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CertData: certPEM, KeyData: keyPEM,
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.ca.cert.Raw}),
	}}
	u, err := url.Parse(f.srv.URL + path + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	var ex remotecommand.Executor
	if protocol == overSPDY {
		ex, err = remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u)
	} else {
		ex, err = remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, u.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return ex.StreamWithContext(ctx, opts)
}

// exec runs a command through Kubernetes' own WebSocket client, as kubectl
// exec does, presenting the API server's certificate.
func (f execFixture) exec(t *testing.T, argv []string, stdin io.Reader, tty bool) (stdout, stderr string, err error) {
	t.Helper()
	return f.execOver(t, overWebSocket, argv, stdin, tty)
}

// execOver is exec over protocol.
func (f execFixture) execOver(t *testing.T, protocol string, argv []string, stdin io.Reader, tty bool) (stdout, stderr string, err error) {
	t.Helper()
	q := url.Values{"command": argv, "stdout": {"true"}}
	if !tty {
		q.Set("stderr", "true")
	}
	if stdin != nil {
		q.Set("stdin", "true")
	}
	if tty {
		q.Set("tty", "true")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: tty}
	if !tty {
		opts.Stderr = &errOut
	}
	err = f.streamOver(t, ctx, protocol, api.ContainerExecPath+"/default/web/app", q, opts)
	return out.String(), errOut.String(), err
}

// TestExecServer: kubectl's own client runs commands through the
// container server, over a WebSocket and over SPDY: stdout and stderr
// apart, its input to the end, the exit code, a terminal, and a command
// that cannot start.
func TestExecServer(t *testing.T) {
	f := newExecFixture(t)
	for _, protocol := range []string{overWebSocket, overSPDY} {
		t.Run(protocol, func(t *testing.T) { testExecServer(t, f, protocol) })
	}
}

func testExecServer(t *testing.T, f execFixture, protocol string) {
	exec := func(t *testing.T, argv []string, stdin io.Reader, tty bool) (string, string, error) {
		t.Helper()
		return f.execOver(t, protocol, argv, stdin, tty)
	}
	out, errOut, err := exec(t, []string{"sh", "-c", "echo $GREETING; echo oops >&2"}, nil, false)
	if err != nil || out != "hello\n" || errOut != "oops\n" {
		t.Errorf("exec = %q, %q, %v", out, errOut, err)
	}

	input := strings.Repeat("a line of input\n", 10000)
	out, _, err = exec(t, []string{"wc", "-c"}, strings.NewReader(input), false)
	if err != nil || strings.TrimSpace(out) != "160000" {
		t.Errorf("exec with input = %q, %v; want the 160000 bytes counted", out, err)
	}

	_, _, err = exec(t, []string{"sh", "-c", "exit 7"}, nil, false)
	var exitErr utilexec.CodeExitError
	if !errors.As(err, &exitErr) || exitErr.Code != 7 {
		t.Errorf("exit 7 came back as %v", err)
	}

	out, _, err = exec(t, []string{"sh", "-c", "[ -t 0 ] && echo terminal $TERM; echo both >&2"}, strings.NewReader(""), true)
	if err != nil || !strings.Contains(out, "terminal xterm") || !strings.Contains(out, "both") {
		t.Errorf("exec on a terminal = %q, %v", out, err)
	}

	_, _, err = exec(t, []string{"no-such-program-for-berth"}, nil, false)
	if err == nil || !strings.Contains(err.Error(), "no-such-program-for-berth") || strings.Contains(err.Error(), "uid-exec") {
		t.Errorf("a missing program: %v", err)
	}
}

// TestExecServerRefuses: a plain request, an unknown container, a bad
// query and a stranger's certificate are refused before any command runs.
func TestExecServerRefuses(t *testing.T) {
	f := newExecFixture(t)
	c := f.client(t, api.APIServerClientName)
	base := f.srv.URL + api.ContainerExecPath
	for _, tc := range []struct {
		url  string
		code int
		want string
	}{
		{base + "/default/web/app?command=true&stdout=true", http.StatusBadRequest, "WebSocket"},
		{base + "/default/web/app?stdout=true", http.StatusBadRequest, "you must specify a command"},
		{base + "/default/web/app?command=true", http.StatusBadRequest, "at least 1 of stdin, stdout, stderr"},
		{base + "/default/web/app?command=true&stdout=maybe", http.StatusBadRequest, "stdout"},
		{base + "/default/web/app?command=true&stdout=true&follow=true", http.StatusBadRequest, "follow"},
	} {
		code, body := logServerGet(t, c, tc.url)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s = %d %q, want %d with %q", tc.url, code, body, tc.code, tc.want)
		}
	}
	// A WebSocket handshake for a container the pod does not have is a
	// 400 before any upgrade.
	if code, body := upgradeGet(t, c, base+"/default/web/nope?command=true&stdout=true"); code != http.StatusBadRequest || !strings.Contains(body, "container nope is not valid for pod default/web") {
		t.Errorf("an unknown container: %d %s", code, body)
	}
	if code, _ := logServerGet(t, f.client(t, "system:node:n2"), base+"/default/web/app?command=true&stdout=true"); code != http.StatusForbidden {
		t.Errorf("another node's certificate: %d, want 403", code)
	}
}

// upgradeGet sends url a WebSocket handshake offering kubectl's protocol
// and returns the answer's code and body, when it is no upgrade.
func upgradeGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol": "v5.channel.k8s.io"} {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, ""
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// An exec without stdin drops the stdin frames a client sends anyway: the
// server keeps reading, so it still answers pings while the command runs.
func TestExecServerDropsUnaskedStdin(t *testing.T) {
	f := newExecFixture(t)
	certPEM, keyPEM := f.ca.issue(t, api.APIServerClientName, x509.ExtKeyUsageClientAuth)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(f.ca.cert)
	d := websocket.Dialer{Subprotocols: []string{"v5.channel.k8s.io"},
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots}}
	q := url.Values{"command": {"sleep", "30"}, "stdout": {"true"}}
	conn, _, err := d.Dial("wss"+strings.TrimPrefix(f.srv.URL, "https")+api.ContainerExecPath+"/default/web/app?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.WriteMessage(websocket.BinaryMessage, []byte("\x00some input")); err != nil {
		t.Fatal(err)
	}
	pong := make(chan struct{}, 1)
	conn.SetPongHandler(func(string) error { pong <- struct{}{}; return nil })
	if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	select {
	case <-pong:
	case <-time.After(10 * time.Second):
		t.Fatal("no pong while the command runs: the server stopped reading")
	}
}

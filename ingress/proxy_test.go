package ingress

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

// env is a store, its informers and a running proxy on loopback.
type env struct {
	t     testing.TB
	store *store.Store
	srv   *Server
	reg   *prometheus.Registry
	log   *lockedWriter
}

func newEnv(t *testing.T) *env { return newBenchEnv(t) }

// quiet makes the proxy's access log go nowhere, formatted still.
func (e *env) quiet() { e.log.discard.Store(true) }

// newBenchEnv is newEnv for tests and benchmarks alike.
func newBenchEnv(t testing.TB) *env {
	t.Helper()
	st, err := store.New(store.Memory{}, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	inf := informer.NewFactory(st, nil, slog.New(slog.DiscardHandler))
	reg := prometheus.NewRegistry()
	logs := &lockedWriter{}
	srv, err := New(Config{HTTPListen: "127.0.0.1:0", HTTPSListen: "127.0.0.1:0", Informers: inf, Registry: reg,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	inf.Start(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		inf.Wait()
	})
	<-srv.Synced()
	e := &env{t: t, store: st, srv: srv, reg: reg, log: logs}
	t.Cleanup(func() {
		if t.Failed() {
			logs.mu.Lock()
			t.Logf("proxy log:\n%s", logs.buf.String())
			logs.mu.Unlock()
		}
	})
	return e
}

type lockedWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	discard atomic.Bool
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	if w.discard.Load() {
		return len(p), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (e *env) put(obj api.Object) {
	e.t.Helper()
	api.Default(obj)
	k := api.KindOf(obj)
	old, err := e.store.Get(k, obj.GetNamespace(), obj.GetName())
	if err == nil {
		obj.SetResourceVersion(old.GetResourceVersion())
		_, err = e.store.Update(context.Background(), obj)
	} else {
		_, err = e.store.Create(context.Background(), obj)
	}
	if err != nil {
		e.t.Fatalf("put %s %s: %v", k.Resource, obj.GetName(), err)
	}
}

// backend is a real HTTP server on loopback that names itself.
func backend(t testing.TB, name string) (*httptest.Server, int32) {
	t.Helper()
	up := websocket.Upgrader{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if websocket.IsWebSocketUpgrade(r) {
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			for {
				mt, msg, err := c.ReadMessage()
				if err != nil {
					return
				}
				if err := c.WriteMessage(mt, append([]byte(name+": "), msg...)); err != nil {
					return
				}
			}
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s host=%s xff=%s body=%s", name, r.Method, r.URL.Path, r.Host, r.Header.Get("X-Forwarded-For"), body)
	}))
	t.Cleanup(s.Close)
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return s, int32(p)
}

// serviceWith puts a Service and its EndpointSlice naming ports on
// loopback (the exec runtime's endpoints are the node's address and the
// pod's port, as here).
func (e *env) serviceWith(name string, port int32, ports ...int32) {
	e.put(&api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: api.ServiceSpec{ClusterIP: api.ClusterIPNone, Ports: []api.ServicePort{{Name: "http", Port: port}}}})
	es := &api.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name + "-1", Labels: map[string]string{api.LabelServiceName: name}},
		AddressType: api.AddressTypeIPv4,
	}
	for i, p := range ports {
		// One slice per port number: the tests' endpoints are one
		// address with several ports.
		if i == 0 {
			es.Ports = []api.EndpointSlicePort{{Name: ptr("http"), Port: ptr(p)}}
			es.Endpoints = []api.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: api.EndpointConditions{Ready: ptr(true)}}}
			continue
		}
		more := es.DeepCopy()
		more.Name = fmt.Sprintf("%s-%d", name, i+1)
		more.Ports[0].Port = ptr(p)
		e.put(more)
	}
	e.put(es)
}

func (e *env) client(serverName string, pool *x509.CertPool) *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			target := e.srv.HTTPAddr().String()
			if strings.HasSuffix(addr, ":443") {
				target = e.srv.HTTPSAddr().String()
			}
			return (&net.Dialer{}).DialContext(ctx, network, target)
		},
		TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: serverName},
		ForceAttemptHTTP2: true,
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func (e *env) get(c *http.Client, url string) (int, string, *http.Response) {
	e.t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		e.t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func shopIngress() *api.Ingress {
	ing := ingress("default", "shop", 0,
		rule("a.test", path("/", prefix, "web", 80)),
		rule("b.test", path("/", prefix, "web", 80), path("/api", prefix, "api", 8080)),
		rule("*.wild.test", path("/", implSpc, "api", 8080)),
	)
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"a.test", "b.test"}, SecretName: "shop-tls"}}
	return ing
}

// TestRoutesHTTPAndHTTPS routes two hosts and a path to two Services
// over HTTP, HTTPS (HTTP/2, the Secret's certificate by SNI) and a
// WebSocket, through real backends on loopback.
func TestRoutesHTTPAndHTTPS(t *testing.T) {
	e := newEnv(t)
	_, webPort := backend(t, "web")
	_, apiPort := backend(t, "api")
	certPEM, keyPEM := testCert(t, "a.test", "b.test")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	e.put(api.DefaultIngressClass())
	e.serviceWith("web", 80, webPort)
	e.serviceWith("api", 8080, apiPort)
	e.put(&api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop-tls"}, Type: api.SecretTypeTLS,
		Data: map[string][]byte{api.TLSCertKey: certPEM, api.TLSPrivateKey: keyPEM}})
	e.put(shopIngress())

	c := e.client("", nil)
	eventually(t, "the route to a.test", func() bool {
		code, _, _ := e.get(c, "http://a.test/")
		return code == http.StatusOK
	})
	for _, tc := range []struct{ url, sni, want string }{
		{"http://a.test/x", "", "web GET /x host=a.test xff=127.0.0.1"},
		{"http://b.test/", "", "web GET / host=b.test"},
		{"http://b.test/api/v1", "", "api GET /api/v1 host=b.test"},
		{"http://b.test/apix", "", "web GET /apix"},
		{"http://x.wild.test/", "", "api GET / host=x.wild.test"},
		{"https://a.test/secure", "a.test", "web GET /secure host=a.test"},
		{"https://b.test/api", "b.test", "api GET /api host=b.test"},
	} {
		cl := c
		if tc.sni != "" {
			cl = e.client(tc.sni, pool)
		}
		code, body, resp := e.get(cl, tc.url)
		if code != http.StatusOK || !strings.HasPrefix(body, tc.want) {
			t.Errorf("%s: %d %q, want %q", tc.url, code, body, tc.want)
		}
		if tc.sni != "" && resp.ProtoMajor != 2 {
			t.Errorf("%s: %s, want HTTP/2", tc.url, resp.Proto)
		}
	}
	if code, _, _ := e.get(c, "http://nothing.test/"); code != http.StatusNotFound {
		t.Errorf("no rule: %d, want 404", code)
	}
	// A name without a Secret gets the fallback certificate.
	conn, err := tls.Dial("tcp", e.srv.HTTPSAddr().String(), &tls.Config{ServerName: "x.wild.test", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "berth ingress fallback certificate" {
		t.Errorf("fallback certificate %q", cn)
	}
	conn.Close()

	// A WebSocket through the proxy.
	d := websocket.Dialer{NetDial: func(network, _ string) (net.Conn, error) { return net.Dial(network, e.srv.HTTPAddr().String()) }}
	ws, resp, err := d.Dial("ws://b.test/api/ws", nil)
	if err != nil {
		t.Fatalf("websocket: %v (%v)", err, resp)
	}
	for i := range 3 {
		msg := fmt.Sprintf("hello %d", i)
		if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, got, err := ws.ReadMessage()
		if err != nil || string(got) != "api: "+msg {
			t.Fatalf("websocket echo %q %v", got, err)
		}
	}
	ws.Close()

	// Access logs in the server's log format.
	e.log.mu.Lock()
	logged := e.log.buf.String()
	e.log.mu.Unlock()
	if !strings.Contains(logged, `msg="ingress request"`) || !strings.Contains(logged, "host=b.test method=GET uri=/api/v1 proto=HTTP/1.1 status=200") ||
		!strings.Contains(logged, "ingress=default/shop backend=default/api:8080 upstream=127.0.0.1:") {
		t.Errorf("access log:\n%s", logged)
	}

	// Metrics per Ingress and backend.
	if n := testutil.ToFloat64(e.srv.proxy.metrics.requests.WithLabelValues("default", "shop", "default/api:8080", "200")); n < 3 {
		t.Errorf("requests to the api backend counted %v", n)
	}
	e.srv.proxy.metrics.duration.WithLabelValues("default", "shop", "default/web:80")
	if n, err := testutil.GatherAndCount(e.reg, "berth_ingress_request_duration_seconds"); err != nil || n < 2 {
		t.Errorf("latency histograms %d %v", n, err)
	}
}

// TestMissingServiceAndSecret: a route to a missing Service, and HTTPS
// for a host whose Secret is missing, answer 503; the others route.
func TestMissingServiceAndSecret(t *testing.T) {
	e := newEnv(t)
	_, webPort := backend(t, "web")
	e.put(api.DefaultIngressClass())
	e.serviceWith("web", 80, webPort)
	ing := ingress("default", "shop", 0,
		rule("a.test", path("/", prefix, "web", 80), path("/gone", prefix, "missing", 80)),
		rule("b.test", path("/", prefix, "web", 80)))
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"b.test"}, SecretName: "missing-tls"}}
	e.put(ing)
	c := e.client("", nil)
	eventually(t, "the route to a.test", func() bool { code, _, _ := e.get(c, "http://a.test/"); return code == http.StatusOK })
	if code, body, _ := e.get(c, "http://a.test/gone/x"); code != http.StatusServiceUnavailable || !strings.Contains(body, "service default/missing not found") {
		t.Errorf("missing service: %d %q", code, body)
	}
	if code, _, _ := e.get(c, "http://b.test/"); code != http.StatusOK {
		t.Errorf("HTTP to b.test: %d", code)
	}
	insecure := e.client("b.test", nil)
	insecure.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify = true
	if code, body, _ := e.get(insecure, "https://b.test/"); code != http.StatusServiceUnavailable || !strings.Contains(body, "missing-tls") {
		t.Errorf("HTTPS to b.test without its Secret: %d %q", code, body)
	}
}

// TestRetriesIdempotentOnly: with one endpoint down, every GET is
// answered (tried again on the other), a POST that meets it is not.
func TestRetriesIdempotentOnly(t *testing.T) {
	e := newEnv(t)
	_, webPort := backend(t, "web")
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := int32(dead.Addr().(*net.TCPAddr).Port)
	dead.Close()
	e.put(api.DefaultIngressClass())
	e.serviceWith("web", 80, webPort, deadPort)
	e.put(ingress("default", "shop", 0, rule("a.test", path("/", prefix, "web", 80))))
	c := e.client("", nil)
	eventually(t, "two endpoints", func() bool {
		r := e.srv.proxy.Table().Match("a.test", "/", false)
		return r != nil && r.Backend != nil && len(r.Backend.Addrs) == 2
	})
	for i := range 10 {
		if code, body, _ := e.get(c, "http://a.test/"); code != http.StatusOK {
			t.Fatalf("GET %d: %d %q", i, code, body)
		}
	}
	failed := 0
	for range 4 {
		resp, err := c.Post("http://a.test/", "text/plain", strings.NewReader("order"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusBadGateway {
			failed++
		}
	}
	if failed != 2 {
		t.Errorf("%d of 4 POSTs failed, want 2 (round robin over a dead and a live endpoint, no retry)", failed)
	}
	if n := testutil.ToFloat64(e.srv.proxy.metrics.upstreamErrors.WithLabelValues("default", "shop", "default/web:80")); n < 5 {
		t.Errorf("upstream errors %v", n)
	}
}

// TestSwapKeepsConnections: a new table is swapped in under a client's
// open keep-alive connection, which goes on with the new routes.
func TestSwapKeepsConnections(t *testing.T) {
	e := newEnv(t)
	_, webPort := backend(t, "web")
	_, apiPort := backend(t, "api")
	e.put(api.DefaultIngressClass())
	e.serviceWith("web", 80, webPort)
	e.serviceWith("api", 8080, apiPort)
	e.put(ingress("default", "shop", 0, rule("a.test", path("/", prefix, "web", 80))))
	var dials int
	var mu sync.Mutex
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, e.srv.HTTPAddr().String())
	}, MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	eventually(t, "web", func() bool { _, body, _ := e.get(c, "http://a.test/"); return strings.HasPrefix(body, "web") })
	e.put(ingress("default", "shop", 0, rule("a.test", path("/", prefix, "api", 8080))))
	eventually(t, "api", func() bool { _, body, _ := e.get(c, "http://a.test/"); return strings.HasPrefix(body, "api") })
	mu.Lock()
	defer mu.Unlock()
	if dials != 1 {
		t.Errorf("%d connections dialled, want 1 kept across the swap", dials)
	}
}

package apiserver_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
)

// seen is what the pod behind the proxy was asked.
type seen struct {
	Method, Path, RawPath, Query, Body, Host string
	Header                                   http.Header
}

// podServer is a real HTTP server standing in for a pod, on 127.0.0.1:
// it answers what it was asked as JSON, streams on /stream until release
// is closed, and echoes a WebSocket on /ws.
type podServer struct {
	ts      *httptest.Server
	port    int
	release chan struct{}
	once    sync.Once
}

// let lets /stream finish.
func (p *podServer) let() { p.once.Do(func() { close(p.release) }) }

func newPodServer(t *testing.T) *podServer {
	t.Helper()
	p := &podServer{release: make(chan struct{})}
	t.Cleanup(p.let)
	mux := http.NewServeMux()
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "first")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-p.release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintln(w, "second")
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, append([]byte("echo "), msg...)); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/redirect/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		loc := map[string]string{
			"path":     "/login?next=%2Fa#top",
			"own":      "http://" + r.Host + "/own/",
			"own-root": "http://" + r.Host,
			"away":     "https://example.com/x",
			"relative": "next/page",
			// An app told its external URL is the proxy path.
			"prefixed": "/api/v1/namespaces/default/services/web:http/proxy/login",
			// An app that builds its URLs from the forwarded host.
			"forwarded": "https://" + r.Header.Get("X-Forwarded-Host") + "/fwd",
		}[strings.TrimPrefix(r.URL.Path, "/redirect/")]
		w.Header().Set("Location", loc) // as written, which http.Redirect is not
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page := proxyTestPage(r.Host)
		if r.URL.Query().Get("gzip") != "" {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = io.WriteString(zw, page)
			_ = zw.Close()
			return
		}
		_, _ = io.WriteString(w, page)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Pod", "yes")
		_ = json.NewEncoder(w).Encode(seen{Method: r.Method, Path: r.URL.Path, RawPath: r.URL.RawPath, Query: r.URL.RawQuery, Body: string(body), Host: r.Host, Header: r.Header})
	})
	p.ts = httptest.NewServer(mux)
	t.Cleanup(p.ts.Close)
	_, port, _ := net.SplitHostPort(p.ts.Listener.Addr().String())
	p.port, _ = strconv.Atoi(port)
	return p
}

// proxyFixture stores a pod at 127.0.0.1 whose port "http" is the pod
// server's, and a service "web" whose port 80 ("http") targets it, with
// the endpoints the endpoints controller would write.
func proxyFixture(t *testing.T, e *env, ip string, port int) {
	t.Helper()
	ctx := context.Background()
	pod := testPod("default", "web", "n1", map[string]string{"app": "web"})
	pod.Spec.Containers[0].Ports = []api.ContainerPort{{Name: "http", ContainerPort: int32(port)}}
	pod.Status = api.PodStatus{Phase: api.PodRunning, PodIP: ip, PodIPs: []api.PodIP{{IP: ip}}}
	svc := &api.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: "TCP"}},
		},
	}
	eps := &api.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Subsets: []api.EndpointSubset{{
			Addresses: []api.EndpointAddress{{IP: ip, TargetRef: &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}}},
			Ports:     []api.EndpointPort{{Name: "http", Port: int32(port), Protocol: "TCP"}},
		}},
	}
	for _, o := range []api.Object{pod, svc, eps} {
		if _, err := e.store.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
}

func decodeSeen(t *testing.T, code int, body []byte) seen {
	t.Helper()
	var s seen
	if code != http.StatusOK {
		t.Fatalf("answer %d: %s", code, body)
	}
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatalf("not what the pod answers: %v: %s", err, body)
	}
	return s
}

// TestProxyReachesPodsAndServices sends every method through pods/proxy
// and services/proxy by each name form, and checks what the pod saw: the
// path (escapes kept), the query, the body, no credentials of the caller.
func TestProxyReachesPodsAndServices(t *testing.T) {
	pod := newPodServer(t)
	e := newEnv(t)
	proxyFixture(t, e, "127.0.0.1", pod.port)
	p := strconv.Itoa(pod.port)
	const ns = "/api/v1/namespaces/default/"
	cases := []struct {
		method, path, body string
		wantPath, wantRaw  string
		wantQuery          string
	}{
		{"GET", ns + "pods/web/proxy/healthz?x=1&y=a%20b", "", "/healthz", "", "x=1&y=a%20b"},
		{"GET", ns + "pods/web/proxy/", "", "/", "", ""},
		{"GET", ns + "pods/web:http/proxy/a/b/", "", "/a/b/", "", ""},
		{"GET", ns + "pods/web:" + p + "/proxy/n", "", "/n", "", ""},
		{"GET", ns + "pods/http:web:" + p + "/proxy/s", "", "/s", "", ""},
		{"GET", ns + "pods/web/proxy/a%2Fb/c", "", "/a/b/c", "/a%2Fb/c", ""},
		{"POST", ns + "pods/web/proxy/submit?q=1", "posted", "/submit", "", "q=1"},
		{"PUT", ns + "pods/web/proxy/put", "put body", "/put", "", ""},
		{"PATCH", ns + "pods/web/proxy/patch", "patch body", "/patch", "", ""},
		{"DELETE", ns + "pods/web/proxy/del", "", "/del", "", ""},
		{"OPTIONS", ns + "pods/web/proxy/opt", "", "/opt", "", ""},
		{"DELETE", ns + "pods/web/proxy", "", "/", "", ""},
		{"GET", ns + "services/web:http/proxy/healthz?z=9", "", "/healthz", "", "z=9"},
		{"GET", ns + "services/web:80/proxy/x", "", "/x", "", ""},
		{"GET", ns + "services/http:web:80/proxy/", "", "/", "", ""},
		{"GET", ns + "services/http:web:http/proxy/y", "", "/y", "", ""},
		{"POST", ns + "services/web:http/proxy/svc", "to the service", "/svc", "", ""},
	}
	for _, c := range cases {
		h := http.Header{"Cookie": {"session=pod"}}
		code, hdr, body := e.doWith(c.method, c.path, adminToken, h, strings.NewReader(c.body))
		s := decodeSeen(t, code, body)
		if s.Method != c.method || s.Path != c.wantPath || s.RawPath != c.wantRaw || s.Query != c.wantQuery || s.Body != c.body {
			t.Errorf("%s %s: the pod saw %s %q (raw %q) ?%q body %q", c.method, c.path, s.Method, s.Path, s.RawPath, s.Query, s.Body)
		}
		if s.Header.Get("Authorization") != "" {
			t.Errorf("%s %s: the caller's credentials reached the pod: %v", c.method, c.path, s.Header)
		}
		if s.Header.Get("Cookie") != "session=pod" || s.Header.Get("X-Forwarded-For") == "" {
			t.Errorf("%s %s: headers the pod should see: %v", c.method, c.path, s.Header)
		}
		if want := "127.0.0.1:" + p; s.Host != want {
			t.Errorf("%s %s: Host %q, want %q", c.method, c.path, s.Host, want)
		}
		if hdr.Get("X-Pod") != "yes" {
			t.Errorf("%s %s: the pod's headers did not come back: %v", c.method, c.path, hdr)
		}
	}

	// Whom the admin impersonates is the API server's business too.
	imp := http.Header{"Impersonate-User": {"jane"}}
	code, _, body := e.doWith("GET", ns+"pods/web/proxy/imp", adminToken, imp, nil)
	if s := decodeSeen(t, code, body); s.Header.Get("Impersonate-User") != "" {
		t.Errorf("impersonation headers reached the pod: %v", s.Header)
	}

	// Hop-by-hop headers end at the API server (over HTTP/1.1, where a
	// client may name them in Connection).
	tr := e.ts.Client().Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = false
	tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	defer tr.CloseIdleConnections()
	hopReq, _ := http.NewRequest("GET", e.ts.URL+ns+"pods/web/proxy/hop", nil)
	hopReq.Header = http.Header{"Authorization": {"Bearer " + adminToken}, "Connection": {"X-Hop"}, "X-Hop": {"1"}, "Te": {"trailers"}, "X-End-To-End": {"1"}}
	hopResp, err := (&http.Client{Transport: tr}).Do(hopReq)
	if err != nil {
		t.Fatal(err)
	}
	hopBody, _ := io.ReadAll(hopResp.Body)
	_ = hopResp.Body.Close()
	if s := decodeSeen(t, hopResp.StatusCode, hopBody); s.Header.Get("X-Hop") != "" || s.Header.Get("X-End-To-End") != "1" || hopResp.ProtoMajor != 1 {
		t.Errorf("hop-by-hop headers: the pod saw %v (over HTTP/%d)", s.Header, hopResp.ProtoMajor)
	}

	// HEAD answers headers only.
	if code, hdr, body := e.do("HEAD", ns+"pods/web/proxy/h", adminToken, "", "", nil); code != http.StatusOK || hdr.Get("X-Pod") != "yes" || len(body) != 0 {
		t.Errorf("HEAD: %d %v %q", code, hdr, body)
	}

	// A GET of the bare proxy path goes to .../proxy/, as in Kubernetes,
	// so that the root page's relative links resolve under it.
	req, _ := http.NewRequest("GET", e.ts.URL+ns+"pods/web:http/proxy?a=1", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	c := e.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != ns+"pods/web:http/proxy/?a=1" {
		t.Errorf("bare proxy path: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestProxyRedirectsStayUnderTheProxy: a pod's redirect to a path of its
// own lands under the proxy path, as Kubernetes rewrites it, and a pod may
// not grant other origins access through CORS headers.
func TestProxyRedirectsStayUnderTheProxy(t *testing.T) {
	pod := newPodServer(t)
	e := newEnv(t)
	proxyFixture(t, e, "127.0.0.1", pod.port)
	c := e.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	const svc = "/api/v1/namespaces/default/services/web:http/proxy"
	for which, want := range map[string]string{
		"path":      svc + "/login?next=%2Fa#top",
		"own":       svc + "/own/",
		"own-root":  svc + "/",
		"away":      "https://example.com/x",
		"relative":  "next/page",
		"prefixed":  svc + "/login",
		"forwarded": svc + "/fwd",
	} {
		req, _ := http.NewRequest("GET", e.ts.URL+svc+"/redirect/"+which, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != want {
			t.Errorf("redirect %s: %d to %q, want %q", which, resp.StatusCode, got, want)
		}
		if cors := resp.Header.Get("Access-Control-Allow-Origin") + resp.Header.Get("Access-Control-Allow-Credentials"); cors != "" {
			t.Errorf("redirect %s: CORS headers came through: %v", which, resp.Header)
		}
	}
}

// proxyTestPage is a page that links to its pod's own paths, to its
// own address, elsewhere, relative to itself, and under the proxy path
// already (an app told its external URL).
func proxyTestPage(host string) string {
	return `<!DOCTYPE html>
<html><head><link rel="stylesheet" href="/static/app.css"><script src='http://` + host + `/js/app.js?v=1'></script></head>
<body><a href="/docs/#intro">docs</a> <a href="https://example.com/">away</a> <a href="next.html">next</a>
<a href='/api/v1/namespaces/default/services/web:http/proxy/based'>based</a>
<form action="/submit" method="post"><img src="/logo.png" alt="/not-a-link"/></form><p>/static/app.css stays in text</p></body></html>
`
}

// TestProxyRewritesPageLinks: an HTML page's links to the pod's own paths
// point under the proxy path, as Kubernetes' proxy rewrites them, so a
// browser behind kubectl proxy loads them; other links and the text stay.
func TestProxyRewritesPageLinks(t *testing.T) {
	pod := newPodServer(t)
	e := newEnv(t)
	proxyFixture(t, e, "127.0.0.1", pod.port)
	const p = "/api/v1/namespaces/default/services/web:http/proxy"
	want := `<!DOCTYPE html>
<html><head><link rel="stylesheet" href="` + p + `/static/app.css"><script src="` + p + `/js/app.js?v=1"></script></head>
<body><a href="` + p + `/docs/#intro">docs</a> <a href="https://example.com/">away</a> <a href="next.html">next</a>
<a href='` + p + `/based'>based</a>
<form action="` + p + `/submit" method="post"><img src="` + p + `/logo.png" alt="/not-a-link"/></form><p>/static/app.css stays in text</p></body></html>
`
	for _, q := range []string{"", "?gzip=1"} {
		code, hdr, body := e.do("GET", p+"/page"+q, adminToken, "", "", nil)
		if code != http.StatusOK || string(body) != want {
			t.Errorf("page%s: %d\n%s\nwant\n%s", q, code, body, want)
		}
		if hdr.Get("Content-Encoding") != "" {
			t.Errorf("page%s: Content-Encoding %q", q, hdr.Get("Content-Encoding"))
		}
	}
	// What is not HTML passes as it is.
	code, _, body := e.do("GET", p+"/plain", adminToken, "", "", nil)
	if s := decodeSeen(t, code, body); s.Path != "/plain" {
		t.Errorf("plain: %+v", s)
	}
}

// TestProxyStreams: the pod's answer reaches the caller as the pod
// writes it, not once it has ended.
func TestProxyStreams(t *testing.T) {
	pod := newPodServer(t)
	e := newEnv(t)
	proxyFixture(t, e, "127.0.0.1", pod.port)
	for _, path := range []string{"pods/web/proxy/stream", "services/web:http/proxy/stream"} {
		req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/namespaces/default/"+path, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		line := make(chan string, 1)
		go func() {
			l, _ := r.ReadString('\n')
			line <- l
		}()
		select {
		case l := <-line:
			if l != "first\n" {
				t.Errorf("%s: first line %q", path, l)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the first line did not come while the pod held the rest", path)
		}
		_ = resp.Body.Close()
	}
	pod.let()
	code, _, body := e.do("GET", "/api/v1/namespaces/default/pods/web/proxy/stream", adminToken, "", "", nil)
	if code != http.StatusOK || string(body) != "first\nsecond\n" {
		t.Errorf("whole stream: %d %q", code, body)
	}
}

// TestProxyUpgrades: a WebSocket goes through to the pod, and the
// messages both ways.
func TestProxyUpgrades(t *testing.T) {
	pod := newPodServer(t)
	e := newEnv(t)
	proxyFixture(t, e, "127.0.0.1", pod.port)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(e.caPEM)
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: roots}, HandshakeTimeout: 20 * time.Second}
	base := "wss" + strings.TrimPrefix(e.ts.URL, "https") + "/api/v1/namespaces/default/"
	for _, path := range []string{"pods/web/proxy/ws", "services/web:80/proxy/ws"} {
		c, resp, err := d.Dial(base+path, http.Header{"Authorization": {"Bearer " + adminToken}})
		if err != nil {
			t.Fatalf("%s: %v (%v)", path, err, resp)
		}
		if err := c.WriteMessage(websocket.TextMessage, []byte("ping")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, msg, err := c.ReadMessage()
		if err != nil || string(msg) != "echo ping" {
			t.Errorf("%s: read %q, %v", path, msg, err)
		}
		_ = c.Close()
	}
}

// TestProxyErrors: each way a proxy request fails is a Status with the
// code and message Kubernetes gives it.
func TestProxyErrors(t *testing.T) {
	pod := newPodServer(t)
	e := newEnv(t)
	proxyFixture(t, e, "127.0.0.1", pod.port)
	ctx := context.Background()

	// A port nothing listens on: the pod cannot be reached.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()

	noIP := testPod("default", "pending", "", nil)
	noIP.Spec.Containers[0].Ports = []api.ContainerPort{{Name: "http", ContainerPort: 80}}
	linkLocal := testPod("default", "meta", "n1", nil)
	linkLocal.Status.PodIP = "169.254.169.254"
	stale := testPod("default", "gone", "n1", nil)
	stale.Status.PodIP = "127.0.0.2"
	for _, o := range []api.Object{
		noIP, linkLocal, stale,
		&api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "empty"}, Spec: api.ServiceSpec{Selector: map[string]string{"app": "none"}, Ports: []api.ServicePort{{Name: "http", Port: 80}}}},
		&api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "stale"}, Spec: api.ServiceSpec{Selector: map[string]string{"app": "gone"}, Ports: []api.ServicePort{{Port: 80}}}},
		&api.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "stale"}, Subsets: []api.EndpointSubset{{
			// The endpoints still name an address the pod no longer holds.
			Addresses: []api.EndpointAddress{{IP: "127.0.0.1", TargetRef: &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: "gone"}}},
			Ports:     []api.EndpointPort{{Port: int32(pod.port)}},
		}}},
		&api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dead"}, Spec: api.ServiceSpec{Ports: []api.ServicePort{{Port: 80}}}},
		&api.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dead"}, Subsets: []api.EndpointSubset{{
			Addresses: []api.EndpointAddress{{IP: "127.0.0.1", TargetRef: &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}}},
			Ports:     []api.EndpointPort{{Port: int32(deadPort)}},
		}}},
	} {
		if _, err := e.store.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	const ns = "/api/v1/namespaces/default/"
	cases := []struct {
		path string
		code int
		msg  string
	}{
		{ns + "pods/nope/proxy/", 404, `pods "nope" not found`},
		{ns + "services/nope:80/proxy/", 404, `services "nope" not found`},
		{ns + "pods/a:b:c:d/proxy/", 400, `invalid pod request "a:b:c:d"`},
		{ns + "pods/ftp:web:80/proxy/", 400, `invalid pod request "ftp:web:80"`},
		{ns + "services/:80/proxy/", 400, `invalid service request ":80"`},
		{ns + "pods/web:nope/proxy/", 400, `pod "web" has no container port named "nope"`},
		{ns + "pods/web:70000/proxy/", 400, `invalid port "70000"`},
		{ns + "pods/pending/proxy/", 503, `pod "pending" has no IP address yet`},
		{ns + "pods/meta:80/proxy/", 400, `address not allowed`},
		{ns + "services/empty:http/proxy/", 503, `no endpoints available for service "empty"`},
		{ns + "services/web:81/proxy/", 503, `no service port 81 found for service "web"`},
		{ns + "services/web/proxy/", 503, `no endpoints available for service "web"`}, // no port names the unnamed one
		{ns + "services/stale/proxy/", 503, `no endpoints available for service "stale"`},
		{ns + "pods/web:" + strconv.Itoa(deadPort) + "/proxy/", 502, "error trying to reach pod \"web\" at 127.0.0.1:" + strconv.Itoa(deadPort)},
		{ns + "services/dead/proxy/", 502, `error trying to reach service "dead"`},
		{"/api/v1/pods/web/proxy/", 404, "could not find the requested resource"},
		{"/apis/apps/v1/namespaces/default/deployments/web/proxy/", 404, "could not find the requested resource"},
		{ns + "configmaps/web/proxy/x", 404, "could not find the requested resource"},
	}
	for _, c := range cases {
		code, _, body := e.do("GET", c.path, adminToken, "", "", nil)
		st := status(t, code, body, c.code)
		if !strings.Contains(st.Message, c.msg) {
			t.Errorf("GET %s: %q, want it to hold %q", c.path, st.Message, c.msg)
		}
	}
	code, _, body := e.do("TRACE", ns+"pods/web/proxy/", adminToken, "", "", nil)
	status(t, code, body, http.StatusMethodNotAllowed)
}

// TestProxyDeadPodDoesNotHang: a pod that takes the connection and never
// answers is given up after the response header timeout, with a 502.
func TestProxyDeadPodDoesNotHang(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); conns.Wait() })
	conns.Add(1)
	go func() {
		defer conns.Done()
		var held []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					_ = c.Close()
				}
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	e := newEnv(t, withConfig(func(c *apiserver.Config) { c.ProxyResponseHeaderTimeout = 100 * time.Millisecond }))
	proxyFixture(t, e, "127.0.0.1", l.Addr().(*net.TCPAddr).Port)
	done := make(chan struct{})
	var code int
	var body []byte
	go func() {
		defer close(done)
		code, _, body = e.do("GET", "/api/v1/namespaces/default/pods/web/proxy/", adminToken, "", "", nil)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the proxy request to a silent pod did not end")
	}
	st := status(t, code, body, http.StatusBadGateway)
	if !strings.Contains(st.Message, "timeout awaiting response headers") {
		t.Errorf("message %q", st.Message)
	}
}

// TestProxyAuthorization: the admin may proxy; a service account, which
// may read its namespace, may not, nor may a node, even to its own pod.
func TestProxyAuthorization(t *testing.T) {
	pod := newPodServer(t)
	e := newEnv(t, withRealAuth())
	proxyFixture(t, e, "127.0.0.1", pod.port)
	ctx := context.Background()
	sa, err := e.store.Create(ctx, &api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "reader"}})
	if err != nil {
		t.Fatal(err)
	}
	grantView(t, e.store, "default", "reader")
	saToken, err := e.signer.IssueServiceAccountToken(sa.(*api.ServiceAccount), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	nodeToken, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	const ns = "/api/v1/namespaces/default/"
	// The service account reads the pod, so the refusal is about proxying.
	if code, _, body := e.do("GET", ns+"pods/web", saToken, "", "", nil); code != http.StatusOK {
		t.Fatalf("the service account reads the pod: %d %s", code, body)
	}
	for _, c := range []struct {
		who, token, method, path string
		code                     int
	}{
		{"admin", adminToken, "GET", ns + "pods/web/proxy/", 200},
		{"admin", adminToken, "POST", ns + "services/web:http/proxy/", 200},
		{"service account", saToken, "GET", ns + "pods/web/proxy/", 403},
		{"service account", saToken, "GET", ns + "services/web:http/proxy/", 403},
		{"service account", saToken, "GET", ns + "pods/nope/proxy/", 403},
		{"node", nodeToken, "GET", ns + "pods/web/proxy/", 403},
		{"node", nodeToken, "POST", ns + "services/web:http/proxy/", 403},
		{"nobody", "", "GET", ns + "pods/web/proxy/", 401},
	} {
		code, _, body := e.do(c.method, c.path, c.token, "", "", nil)
		if code != c.code {
			t.Errorf("%s %s %s: %d, want %d: %s", c.who, c.method, c.path, code, c.code, body)
		}
		if c.code == 403 && !strings.Contains(string(body), `/proxy\" in API group`) {
			t.Errorf("%s %s %s: the refusal does not name the proxy subresource: %s", c.who, c.method, c.path, body)
		}
	}
}

// TestProxyDiscovery: kubectl learns pods/proxy and services/proxy and
// their verbs from both discovery documents.
func TestProxyDiscovery(t *testing.T) {
	e := newEnv(t)
	code, _, body := e.do("GET", "/api/v1", adminToken, "", "application/json", nil)
	if code != http.StatusOK {
		t.Fatalf("/api/v1: %d %s", code, body)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, r := range list.APIResources {
		if strings.HasSuffix(r.Name, "/proxy") {
			found[r.Name] = r.Kind + " " + strings.Join(r.Verbs, ",")
		}
	}
	want := map[string]string{
		"pods/proxy":     "PodProxyOptions create,delete,get,patch,update",
		"services/proxy": "ServiceProxyOptions create,delete,get,patch,update",
	}
	if fmt.Sprint(found) != fmt.Sprint(want) {
		t.Errorf("/api/v1 proxy subresources: %v, want %v", found, want)
	}
	code, _, body = e.do("GET", "/api", adminToken, "", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", nil)
	if code != http.StatusOK {
		t.Fatalf("/api aggregated: %d %s", code, body)
	}
	for _, want := range []string{
		`"subresource":"proxy","responseKind":{"group":"","version":"v1","kind":"PodProxyOptions"},"verbs":["create","delete","get","patch","update"]`,
		`"subresource":"proxy","responseKind":{"group":"","version":"v1","kind":"ServiceProxyOptions"},"verbs":["create","delete","get","patch","update"]`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("aggregated discovery lacks %s", want)
		}
	}
}

// TestProxyEndsOnShutdown: a proxied stream in flight ends when the
// server shuts down, as a watch does, rather than holding it up.
func TestProxyEndsOnShutdown(t *testing.T) {
	pod := newPodServer(t)
	e := newEnv(t)
	proxyFixture(t, e, "127.0.0.1", pod.port)
	req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/namespaces/default/pods/web/proxy/stream", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		rest <- string(b)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-rest:
		if got != "first\n" {
			t.Errorf("the stream held %q", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the proxied stream outlived the server's shutdown")
	}
}

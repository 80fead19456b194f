package ingress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
)

// proxyTo is a Proxy routing a.test/ to endpoints on loopback, served
// by the front as the Ingress proxy's HTTP listener serves it; its
// access log is returned.
func proxyTo(t *testing.T, clk clock.PassiveClock, ports ...int32) (*Proxy, string, *lockedWriter) {
	t.Helper()
	logs := &lockedWriter{}
	p := NewProxy(NewMetrics(), slog.New(slog.NewTextHandler(logs, nil)), clk)
	objs := Objects{
		Classes:   []*api.IngressClass{api.DefaultIngressClass()},
		Services:  []*api.Service{service("default", "web", api.ServicePort{Name: "http", Port: 80})},
		Ingresses: []*api.Ingress{ingress("default", "shop", 0, rule("a.test", path("/", prefix, "web", 80)))},
	}
	for i, port := range ports {
		es := slice("default", "web", "http", port, map[string]bool{"127.0.0.1": true})
		es.Name = fmt.Sprintf("web-%d", i)
		objs.EndpointSlices = append(objs.EndpointSlices, es)
	}
	p.SetTable(Build(objs))
	url, _ := serveFront(t, p)
	t.Cleanup(p.CloseIdle)
	t.Cleanup(func() {
		if t.Failed() {
			logs.mu.Lock()
			t.Logf("proxy log:\n%s", logs.buf.String())
			logs.mu.Unlock()
		}
	})
	return p, url, logs
}

// serveFront serves p on loopback through the front, as Server.Run
// serves its HTTP listener, until the test ends; it returns the URL and
// the count of connections handed to net/http.
func serveFront(t testing.TB, p *Proxy) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	f := newFront(p, l, protocols, nil)
	handoffs := new(atomic.Int64)
	f.hs.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			handoffs.Add(1)
		}
	}
	done := make(chan error, 1)
	go func() { done <- f.serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.shutdown(ctx); err != nil {
			t.Errorf("front shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("front serve: %v", err)
		}
	})
	return "http://" + l.Addr().String(), handoffs
}

func portOf(t testing.TB, addr net.Addr) int32 {
	t.Helper()
	return int32(addr.(*net.TCPAddr).Port)
}

// rawExchange sends a request as written and reads one answer.
func rawExchange(t *testing.T, url, request string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(request, " ")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestForwardHeaders: what the endpoint is sent and what the client
// gets back, as httputil.ReverseProxy with SetXForwarded passes them:
// hop-by-hop headers and those Connection names dropped both ways, the
// client's forwarding headers replaced, Te: trailers kept, no
// User-Agent made up, an unparsable query cleaned.
func TestForwardHeaders(t *testing.T) {
	t.Parallel()
	var seen atomic.Value
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %s host=%s len=%d\n", r.Method, r.RequestURI, r.Proto, r.Host, r.ContentLength)
		_ = r.Header.Write(&b)
		seen.Store(b.String())
		w.Header().Set("Connection", "X-Secret")
		w.Header().Set("X-Secret", "hop")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Kept", "end-to-end")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(back.Close)
	_, url, _ := proxyTo(t, nil, portOf(t, back.Listener.Addr()))

	resp, body := rawExchange(t, url, "GET /p/a%20th?x=1;y=2&ok=3&z=%zz HTTP/1.1\r\nHost: a.test\r\n"+
		"Connection: keep-alive, X-Drop\r\nX-Drop: 1\r\nKeep-Alive: 300\r\nProxy-Authorization: Basic eA==\r\n"+
		"Te: trailers, deflate\r\nX-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Host: evil\r\nForwarded: for=6.6.6.6\r\n"+
		"Upgrade-Insecure-Requests: 1\r\nAccept: */*\r\nAccept: text/plain\r\n\r\n")
	if resp.StatusCode != http.StatusOK || body != "ok" {
		t.Fatalf("%s %q", resp.Status, body)
	}
	got := seen.Load().(string)
	for _, want := range []string{
		"GET /p/a%20th?ok=3 HTTP/1.1 host=a.test len=0\n", "Te: trailers\r\n", "X-Forwarded-For: 127.0.0.1\r\n",
		"X-Forwarded-Host: a.test\r\n", "X-Forwarded-Proto: http\r\n", "Accept: */*\r\nAccept: text/plain\r\n",
		"Upgrade-Insecure-Requests: 1\r\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("endpoint saw no %q in\n%s", want, got)
		}
	}
	for _, not := range []string{"X-Drop", "Keep-Alive", "Proxy-Authorization", "6.6.6.6", "evil", "Forwarded:", "User-Agent", "deflate", "Connection"} {
		if strings.Contains(got, not) {
			t.Errorf("endpoint saw %q in\n%s", not, got)
		}
	}
	if resp.Header.Get("X-Secret") != "" || resp.Header.Get("Keep-Alive") != "" || resp.Header.Get("X-Kept") != "end-to-end" ||
		len(resp.Header.Values("Set-Cookie")) != 2 {
		t.Errorf("client got header %v", resp.Header)
	}

	// A PUT without a body is sent with its length, 0, as http.Transport
	// sends it; a HEAD gets the length of the GET's answer.
	if resp, _ := rawExchange(t, url, "PUT /x HTTP/1.1\r\nHost: a.test\r\nContent-Length: 0\r\n\r\n"); resp.StatusCode != http.StatusOK ||
		!strings.Contains(seen.Load().(string), "Content-Length: 0\r\n") {
		t.Errorf("PUT: %s, endpoint saw\n%s", resp.Status, seen.Load())
	}
	if resp, body := rawExchange(t, url, "HEAD / HTTP/1.1\r\nHost: a.test\r\n\r\n"); resp.StatusCode != http.StatusOK || body != "" ||
		resp.ContentLength != 2 {
		t.Errorf("HEAD: %s %q length %d", resp.Status, body, resp.ContentLength)
	}
}

// TestForwardStreams: an answer without a length reaches the client as
// the endpoint writes it, its trailers (announced or not) after it; an
// informational answer goes before the final one, which the access log
// records.
func TestForwardStreams(t *testing.T) {
	t.Parallel()
	next := make(chan struct{})
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.Header().Set("Trailer", "X-Sum")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-next
		_, _ = io.WriteString(w, "second\n")
		w.Header().Set("X-Sum", "2")
		w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
	}))
	t.Cleanup(back.Close)
	_, url, logs := proxyTo(t, nil, portOf(t, back.Listener.Addr()))

	var hints []int
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			if h.Get("Link") != "" {
				hints = append(hints, code)
			}
			return nil
		}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/", nil)
	req.Host = "a.test"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	// The endpoint waits for this read before it writes more: the
	// first line came through alone.
	if line, err := br.ReadString('\n'); line != "first\n" || err != nil {
		t.Fatalf("first line %q %v", line, err)
	}
	close(next)
	rest, err := io.ReadAll(br)
	if string(rest) != "second\n" || err != nil {
		t.Fatalf("rest %q %v", rest, err)
	}
	if resp.Trailer.Get("X-Sum") != "2" || resp.Trailer.Get("X-Late") != "yes" {
		t.Errorf("trailer %v", resp.Trailer)
	}
	if len(hints) != 1 || hints[0] != http.StatusEarlyHints {
		t.Errorf("informational answers with the Link header %v, want [103]", hints)
	}
	eventually(t, "the access log line", func() bool {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return strings.Contains(logs.buf.String(), "status=200")
	})
}

// TestForwardCutShort: an endpoint that dies in the middle of an
// answer makes the client's answer end short, not whole; the proxy
// still logs it.
func TestForwardCutShort(t *testing.T) {
	t.Parallel()
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
		_ = bw.Flush()
		c.Close()
	}))
	t.Cleanup(back.Close)
	_, url, logs := proxyTo(t, nil, portOf(t, back.Listener.Addr()))
	req, _ := http.NewRequest(http.MethodGet, url+"/", nil)
	req.Host = "a.test"
	// The connection is cut before or after the header reached the
	// client: either way it cannot take the answer for whole.
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		var body []byte
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("read %q, %v: want the answer cut short", body, err)
		}
	}
	eventually(t, "the access log line", func() bool {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return strings.Contains(logs.buf.String(), "status=200 bytes=10")
	})
}

// TestForwardClientGone: a client that gives up waiting is logged as
// nginx's 499, and the endpoint's connection is closed under its
// request, not left to answer into the pool.
func TestForwardClientGone(t *testing.T) {
	t.Parallel()
	gone, arrived := make(chan struct{}), make(chan struct{})
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
		close(gone)
	}))
	t.Cleanup(back.Close)
	p, url, logs := proxyTo(t, nil, portOf(t, back.Listener.Addr()))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/", nil)
	req.Host = "a.test"
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled request was answered")
	}
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the endpoint's request went on after the client left")
	}
	eventually(t, "status 499 in the access log", func() bool {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return strings.Contains(logs.buf.String(), "status=499")
	})
	if n := p.up.idleCount(back.Listener.Addr().String()); n != 0 {
		t.Errorf("%d connections of the abandoned request pooled", n)
	}
}

// closer is an endpoint that answers each connection's first request
// with keep-alive and then closes it, as one whose keep-alive timeout
// ran out does; it counts its connections.
func closer(t *testing.T) (int32, *atomic.Int64, chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var conns atomic.Int64
	closed := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer func() { closed <- struct{}{} }()
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	return int32(l.Addr().(*net.TCPAddr).Port), &conns, closed
}

// TestForwardStaleConnection: a pooled connection the endpoint closed
// while it was idle is not used: a POST, which is never sent twice,
// goes over a new one and is answered.
func TestForwardStaleConnection(t *testing.T) {
	t.Parallel()
	port, conns, closed := closer(t)
	_, url, _ := proxyTo(t, nil, port)
	for i, method := range []string{http.MethodGet, http.MethodPost, http.MethodPost, http.MethodGet} {
		req, _ := http.NewRequest(method, url+"/", nil)
		req.Host = "a.test"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Fatalf("%s %d: %s %q", method, i, resp.Status, body)
		}
		// The endpoint has closed it (on loopback its FIN is in by
		// the time close returns).
		<-closed
	}
	if n := conns.Load(); n != 4 {
		t.Errorf("%d connections, want 4", n)
	}
}

// TestUpstreamPool: one connection carries requests in turn; it is
// closed when idle past the timeout on the proxy's clock, and when its
// endpoint leaves the routing table.
func TestUpstreamPool(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	back := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	back.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	back.Start()
	t.Cleanup(back.Close)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
	p, url, _ := proxyTo(t, clk, portOf(t, back.Listener.Addr()))
	addr := back.Listener.Addr().String()
	get := func() {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url+"/", nil)
		req.Host = "a.test"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatal(resp.Status)
		}
	}
	for range 5 {
		get()
	}
	if n, idle := conns.Load(), p.up.idleCount(addr); n != 1 || idle != 1 {
		t.Fatalf("%d connections, %d idle; want 1 and 1", n, idle)
	}
	clk.SetTime(clk.Now().Add(89 * time.Second))
	get()
	clk.SetTime(clk.Now().Add(90 * time.Second))
	get()
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections after one was idle 90 s, want 2", n)
	}
	p.SetTable(Build(Objects{}))
	if idle := p.up.idleCount(addr); idle != 0 {
		t.Errorf("%d idle connections to an endpoint the table dropped", idle)
	}
}

// TestDirect: which requests the proxy's own client takes.
func TestDirect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", true},
		{"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", true},
		{"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc", false},
		{"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc", false},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", false},
		{"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", false},
		{"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n", false},
		{"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", false},
	} {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tc.raw)))
		if err != nil {
			t.Fatal(err)
		}
		if got := direct(r); got != tc.want {
			t.Errorf("%q: direct %v, want %v", tc.raw, got, tc.want)
		}
		// A body buffered for a retry is in hand.
		if r.Method == http.MethodPut && r.ContentLength > 0 {
			if err := bufferBody(r); err != nil {
				t.Fatal(err)
			}
			if !direct(r) {
				t.Errorf("%q buffered: not direct", tc.raw)
			}
		}
	}
}

// FuzzWriteRequest: any request net/http's server would hand the proxy
// is written as one request that parses back to the same method, path,
// query (once cleaned), host, end-to-end headers and body.
func FuzzWriteRequest(f *testing.F) {
	f.Add("GET", "/a%20b?x=1;y", "a.test", "X-A", "1", "Connection", "x-a", []byte(nil))
	f.Add("PUT", "/", "b.test:8080", "Te", "trailers", "Keep-Alive", "1", []byte("body"))
	f.Add("DELETE", "/p?q=%zz", "c", "Forwarded", "for=x", "X-B", "", []byte("{}"))
	f.Fuzz(func(t *testing.T, method, target, host, k1, v1, k2, v2 string, body []byte) {
		var raw strings.Builder
		fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: %s\r\n%s: %s\r\n%s: %s\r\n", method, target, host, k1, v1, k2, v2)
		if len(body) > 0 {
			fmt.Fprintf(&raw, "Content-Length: %d\r\n", len(body))
		}
		raw.WriteString("\r\n")
		raw.Write(body)
		in, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw.String())))
		if err != nil || in.Method == http.MethodConnect || len(in.TransferEncoding) > 0 {
			return // not a request the proxy's client is given
		}
		in.RemoteAddr = "198.18.0.9:4000"
		if err := bufferBody(in); err != nil {
			t.Fatal(err)
		}
		if !direct(in) {
			return
		}
		var out strings.Builder
		bw := bufio.NewWriter(&out)
		if err := writeRequest(bw, in); err != nil {
			t.Fatal(err)
		}
		_ = bw.Flush()
		got, err := http.ReadRequest(bufio.NewReader(strings.NewReader(out.String())))
		if err != nil {
			t.Fatalf("written request does not parse: %v\n%q", err, out.String())
		}
		wantURI := sentURI(in)
		if got.Method != in.Method || got.RequestURI != wantURI || got.Host != in.Host {
			t.Fatalf("%s %s host %q, want %s %s host %q", got.Method, got.RequestURI, got.Host, in.Method, wantURI, in.Host)
		}
		gotBody, _ := io.ReadAll(got.Body)
		if string(gotBody) != string(body) {
			t.Fatalf("body %q, want %q", gotBody, body)
		}
		if got.Header.Get("X-Forwarded-For") != "198.18.0.9" || got.Header.Get("X-Forwarded-Proto") != "http" {
			t.Fatalf("forwarding headers %v", got.Header)
		}
		for k, vv := range in.Header {
			switch {
			case hopHeader(k), k == "Content-Length", k == "Forwarded", strings.HasPrefix(k, "X-Forwarded-"),
				httpguts.HeaderValuesContainsToken(in.Header["Connection"], k):
				if k != "Te" && k != "Content-Length" && !strings.HasPrefix(k, "X-Forwarded-") && len(got.Header[k]) > 0 {
					t.Fatalf("hop-by-hop %s passed on: %v", k, got.Header[k])
				}
			default:
				if strings.Join(got.Header[k], ",") != strings.Join(vv, ",") {
					t.Fatalf("header %s: %q, want %q", k, got.Header[k], vv)
				}
			}
		}
		if n := strconv.Itoa(len(body)); len(body) > 0 && got.Header.Get("Content-Length") != n {
			t.Fatalf("Content-Length %q, want %s", got.Header.Get("Content-Length"), n)
		}
	})
}

// sentURI is the target the proxy sends r on with: its query cleaned.
func sentURI(r *http.Request) string {
	q := cleanQueryParams(r.URL.RawQuery)
	if q == r.URL.RawQuery {
		return r.URL.RequestURI()
	}
	u := *r.URL
	u.RawQuery = q
	return u.RequestURI()
}

// TestStreamed: which answers are flushed at each write.
func TestStreamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ct     string
		length int64
		want   bool
	}{
		{"text/plain", 10, false},
		{"", -1, true},
		{"text/event-stream", 10, true},
		{"Text/Event-Stream; charset=utf-8", 10, true},
		{"text/event-streams", 10, false},
		{"text/event", 10, false},
	} {
		resp := &http.Response{ContentLength: tc.length, Header: http.Header{"Content-Type": {tc.ct}}}
		if got := streamed(resp); got != tc.want {
			t.Errorf("%q length %d: streamed %v, want %v", tc.ct, tc.length, got, tc.want)
		}
	}
}

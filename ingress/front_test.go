package ingress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// echo is an endpoint that answers with what it was asked: method,
// target, host and body.
func echo(t *testing.T) int32 {
	t.Helper()
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s host=%s body=%s", r.Method, r.RequestURI, r.Host, body)
	}))
	t.Cleanup(back.Close)
	return portOf(t, back.Listener.Addr())
}

// TestFrontTakesOrHandsOff: the front answers the common requests
// itself and hands the others, with what it read of them, to net/http,
// which answers them as it always has.
func TestFrontTakesOrHandsOff(t *testing.T) {
	t.Parallel()
	p, _, _ := proxyTo(t, nil, echo(t))
	url, handoffs := serveFront(t, p)
	long := strings.Repeat("x", MaxRetryBody+1)
	for _, tc := range []struct {
		name, raw string
		status    int
		body      string // the answer's start
		handedOff bool
	}{
		{"get", "GET /a?b=1 HTTP/1.1\r\nHost: a.test\r\n\r\n", 200, "GET /a?b=1 host=a.test body=", false},
		{"post", "POST /p HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\nabc", 200, "POST /p host=a.test body=abc", false},
		{"escaped", "GET /a%20b HTTP/1.1\r\nHost: a.test\r\n\r\n", 200, "GET /a%20b host", false},
		{"re-escaped", "GET /a\"b HTTP/1.1\r\nHost: a.test\r\n\r\n", 200, "GET /a%22b host", false},
		{"query cleaned", "GET /?x=1;y=2&ok=3 HTTP/1.1\r\nHost: a.test\r\n\r\n", 200, "GET /?ok=3 host", false},
		{"no rule", "GET / HTTP/1.1\r\nHost: nowhere.test\r\n\r\n", 404, "404 page not found", false},
		{"http/1.0", "GET / HTTP/1.0\r\nHost: a.test\r\n\r\n", 200, "GET / host=a.test", true},
		{"chunked", "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 200,
			"POST / host=a.test body=abc", true},
		{"long body", "PUT / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 65537\r\n\r\n" + long, 200, "PUT / host=a.test body=xxx", true},
		{"long head", "GET / HTTP/1.1\r\nHost: a.test\r\nX-Long: " + strings.Repeat("y", frontReadBuffer) + "\r\n\r\n", 200, "GET / host", true},
		{"bare LF", "GET / HTTP/1.1\nHost: a.test\n\n", 200, "GET / host=a.test", true},
		{"absolute form", "GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n", 200, "GET /x host=a.test", true},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400, "", true},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", 400, "", true},
		{"bad escape", "GET /%zz HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, "", true},
		{"bad field", "GET / HTTP/1.1\r\nHost: a.test\r\nX Y: z\r\n\r\n", 400, "", true},
	} {
		before := handoffs.Load()
		resp, body := rawExchange(t, url, tc.raw)
		if resp.StatusCode != tc.status || !strings.HasPrefix(body, tc.body) {
			t.Errorf("%s: %s %.60q, want %d %q", tc.name, resp.Status, body, tc.status, tc.body)
		}
		if got := handoffs.Load() > before; got != tc.handedOff {
			t.Errorf("%s: handed off %v, want %v", tc.name, got, tc.handedOff)
		}
	}
}

// TestFrontKeepAlive: requests sent one after another without waiting
// (pipelined) are answered in order on one connection, the front's and
// then, from the first it does not take, net/http's; Connection: close
// is honoured.
func TestFrontKeepAlive(t *testing.T) {
	t.Parallel()
	p, _, _ := proxyTo(t, nil, echo(t))
	url, handoffs := serveFront(t, p)
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: a.test\r\n\r\n"+
		"POST /2 HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\n\r\nhi"+
		"HEAD /3 HTTP/1.1\r\nHost: a.test\r\n\r\n"+
		"GET /4 HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+
		"GET /5 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i, want := range []string{"GET /1 host=a.test body=", "POST /2 host=a.test body=hi", "", "GET /4 host=a.test body=",
		"GET /5 host=a.test body="} {
		method := http.MethodGet
		if i == 2 {
			method = http.MethodHead
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != want {
			t.Fatalf("answer %d: %q %v, want %q", i+1, body, err, want)
		}
		if i == 2 && resp.ContentLength != int64(len("HEAD /3 host=a.test body=")) {
			t.Errorf("HEAD: length %d", resp.ContentLength)
		}
		if resp.Close != (i == 4) {
			t.Errorf("answer %d: Close %v", i+1, resp.Close)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after Connection: close: %v, want EOF", err)
	}
	if n := handoffs.Load(); n != 1 {
		t.Errorf("%d connections handed off, want 1", n)
	}
}

// TestFrontShutdown: shutting down closes an idle keep-alive connection
// at once and lets a request in flight finish, its answer saying the
// connection closes.
func TestFrontShutdown(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan struct{}), make(chan struct{})
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(back.Close)
	p, _, _ := proxyTo(t, nil, portOf(t, back.Listener.Addr()))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(p, l, nil, nil)
	served := make(chan error, 1)
	go func() { served <- f.serve() }()

	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	idle, idleR := dial()
	if _, err := io.WriteString(idle, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(idleR, nil); err != nil || resp.Close {
		t.Fatalf("%v %v", resp, err)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	busy, busyR := dial()
	if _, err := io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-arrived
	shut := make(chan error, 1)
	go func() { shut <- f.shutdown(context.Background()) }()
	_ = idle.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := idleR.ReadByte(); err != io.EOF {
		t.Errorf("idle connection: %v, want EOF", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("shutdown returned with a request in flight: %v", err)
	default:
	}
	close(release)
	resp, err := http.ReadResponse(busyR, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "ok" || !resp.Close {
		t.Errorf("answer in flight: %q, Close %v", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("serve: %v", err)
	}
}

// FuzzFrontRequest: a request the front takes is one net/http reads
// too, as the same request, and the front sends on what the proxy sends
// on for it through net/http.
func FuzzFrontRequest(f *testing.F) {
	f.Add([]byte("GET /a%20b?x=1;y HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\nTe: trailers\r\n\r\n"))
	f.Add([]byte("PUT /p HTTP/1.1\r\nhost: b.test:8080\r\ncontent-length: 4\r\nX-B:  v \r\n\r\nbody"))
	f.Add([]byte("DELETE /q?%zz HTTP/1.1\r\nHost: c\r\nForwarded: for=x\r\nConnection: close\r\n\r\n"))
	f.Add([]byte("GET /<>^ HTTP/1.1\r\nHost: d\r\nX-Forwarded-For: 1.2.3.4\r\nKeep-Alive: 5\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		end, bare := headEnd(raw, 0)
		if end == 0 || bare {
			return
		}
		var r request
		if err := r.parse(bytes.Clone(raw[:end])); err != nil {
			if !errors.Is(err, errHandOff) {
				t.Fatalf("parse: %v", err)
			}
			return
		}
		if int64(len(raw)-end) < r.contentLength {
			return
		}
		body := raw[end : end+int(r.contentLength)]
		in, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			t.Fatalf("the front takes what net/http refuses (%v):\n%q", err, raw[:end])
		}
		if in.Method != r.method || in.RequestURI != r.uri || in.Host != r.host || in.URL.Path != r.path ||
			in.Close != r.close || in.ContentLength != r.contentLength {
			t.Fatalf("front read %+v\nnet/http read %s %s host %q path %q close %v length %d", r, in.Method, in.RequestURI,
				in.Host, in.URL.Path, in.Close, in.ContentLength)
		}
		fc := &frontConn{req: r, body: body, clientIP: "198.18.0.9"}
		var out bytes.Buffer
		bw := bufio.NewWriter(&out)
		if err := fc.writeRequest(bw); err != nil {
			t.Fatal(err)
		}
		_ = bw.Flush()
		got, err := http.ReadRequest(bufio.NewReader(&out))
		if err != nil {
			t.Fatalf("sent on a request that does not parse: %v\n%q", err, out.String())
		}
		wantURI := sentURI(in)
		if got.Method != in.Method || got.RequestURI != wantURI || got.Host != in.Host {
			t.Fatalf("sent %s %s host %q, want %s %s host %q", got.Method, got.RequestURI, got.Host, in.Method, wantURI, in.Host)
		}
		gotBody, _ := io.ReadAll(got.Body)
		if !bytes.Equal(gotBody, body) {
			t.Fatalf("body %q, want %q", gotBody, body)
		}
		// What net/http's way sends on, from the same request.
		in.RemoteAddr = "198.18.0.9:4000"
		in.Body = io.NopCloser(bytes.NewReader(body))
		in.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		var ref bytes.Buffer
		bw = bufio.NewWriter(&ref)
		if err := writeRequest(bw, in); err != nil {
			t.Fatal(err)
		}
		_ = bw.Flush()
		want, err := http.ReadRequest(bufio.NewReader(&ref))
		if err != nil {
			t.Fatal(err)
		}
		for k := range mergeKeys(got.Header, want.Header) {
			if g, w := strings.Join(got.Header[k], "\n"), strings.Join(want.Header[k], "\n"); g != w {
				t.Fatalf("field %s: the front sends %q, net/http's way %q", k, g, w)
			}
		}
	})
}

// FuzzAnswerHead: an answer the front passes on as it came is one
// net/http's ReadResponse reads the same: status, length, whether the
// endpoint ends the connection, whether it is streamed, and the fields
// the client gets.
func FuzzAnswerHead(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\nX-B:  2 \r\n\r\nok"), false)
	f.Add([]byte("HTTP/1.1 204 No Content\r\nDate: x\r\nConnection: close\r\n\r\n"), false)
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/event-stream\r\nKeep-Alive: 1\r\n\r\n"), true)
	f.Fuzz(func(t *testing.T, raw []byte, isHead bool) {
		end, bare := headEnd(raw, 0)
		if end == 0 || bare {
			return
		}
		var a answerHead
		if !a.parse(bytes.Clone(raw[:end]), isHead) {
			return
		}
		req := otherRequest
		if isHead {
			req = headRequest
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), req)
		if err != nil {
			t.Fatalf("the front passes on what ReadResponse refuses (%v):\n%q", err, raw[:end])
		}
		noBody := isHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
		if resp.StatusCode != a.status || resp.Close != a.close || !noBody && resp.ContentLength != a.length ||
			a.stream != eventStream(resp.Header.Get("Content-Type")) {
			t.Fatalf("front read %+v\nReadResponse read %d length %d close %v", a, resp.StatusCode, resp.ContentLength, resp.Close)
		}
		passed := http.Header{}
		for line := range fieldLines(a.fields) {
			if name, value := splitField(line); !hopByHop(name, a.connection) {
				passed.Add(string(name), string(value))
			}
		}
		removeHopByHop(resp.Header)
		for k := range mergeKeys(passed, resp.Header) {
			if g, w := strings.Join(passed[k], "\n"), strings.Join(resp.Header[k], "\n"); g != w {
				t.Fatalf("field %s: the front passes %q on, net/http's way %q", k, g, w)
			}
		}
	})
}

func mergeKeys(a, b http.Header) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

// emfileListener fails its first Accept as a process out of file
// descriptors does.
type emfileListener struct {
	net.Listener
	failed bool
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestFrontRidesOutAcceptErrors: a temporary accept error (EMFILE) makes
// the front wait and accept again, as net/http's server does, not stop.
func TestFrontRidesOutAcceptErrors(t *testing.T) {
	t.Parallel()
	p, _, _ := proxyTo(t, nil, echo(t))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(p, &emfileListener{Listener: l}, nil, nil)
	served := make(chan error, 1)
	go func() { served <- f.serve() }()
	t.Cleanup(func() { _ = f.shutdown(context.Background()); <-served })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		select {
		case serr := <-served:
			served <- serr // for the cleanup
			t.Fatalf("the front stopped serving: %v", serr)
		default:
		}
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(resp.Body); !strings.HasPrefix(string(body), "GET /x host=a.test") {
		t.Errorf("answer %q", body)
	}
}

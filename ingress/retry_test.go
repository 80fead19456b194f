package ingress

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/berth-dev/berth/api"
)

// dropper is a backend that takes each connection, reads the start of
// the request and resets the connection without an answer, as a
// process that dies mid-request does; it counts the requests it took.
func dropper(t *testing.T) (int32, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_, _ = c.Read(make([]byte, 512))
			_ = c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	return int32(l.Addr().(*net.TCPAddr).Port), &n
}

// TestRetryBodies: one of a Service's two endpoints resets every
// request it takes. Requests go to the endpoints in turn, so of two in
// a row one meets it first. A PUT or DELETE with a body of at most
// MaxRetryBody, of known length or chunked, is sent again to the other
// endpoint whole and answered; a POST or PATCH is never sent twice, and
// a longer PUT is streamed to one endpoint alone: each fails once of
// two, and the live endpoint sees only the other.
func TestRetryBodies(t *testing.T) {
	e := newEnv(t)
	e.quiet()
	var posts atomic.Int64
	live, livePort := backend(t, "live")
	inner := live.Config.Handler
	live.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost || r.Method == http.MethodPatch {
			posts.Add(1)
		}
		inner.ServeHTTP(w, r)
	})
	dropPort, dropped := dropper(t)
	e.put(api.DefaultIngressClass())
	e.serviceWith("web", 80, livePort, dropPort)
	e.put(ingress("default", "shop", 0, rule("a.test", path("/", prefix, "web", 80))))
	eventually(t, "two endpoints", func() bool {
		r := e.srv.proxy.Table().Match("a.test", "/", false)
		return r != nil && r.Backend != nil && len(r.Backend.Addrs) == 2
	})
	c := e.client("", nil)
	do := func(method, body string, chunked bool) (int, string) {
		t.Helper()
		var rd io.Reader = strings.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd) // no length known: sent chunked
		}
		req, err := http.NewRequest(method, "http://a.test/doc", rd)
		if err != nil {
			t.Fatal(err)
		}
		if chunked {
			req.ContentLength = -1
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	small := strings.Repeat("0123456789abcdef", 1000) // 16,000 bytes
	large := strings.Repeat("x", MaxRetryBody+1)      // one past the bound
	exact := strings.Repeat("y", MaxRetryBody)        // the bound itself
	for _, tc := range []struct {
		method, body string
		chunked      bool
	}{
		{http.MethodPut, small, false},
		{http.MethodPut, small, true},
		{http.MethodPut, exact, true},
		{http.MethodDelete, "{\"propagationPolicy\":\"Foreground\"}", false},
	} {
		before := dropped.Load()
		for range 2 {
			code, got := do(tc.method, tc.body, tc.chunked)
			if want := "live " + tc.method + " /doc host=a.test xff=127.0.0.1 body=" + tc.body; code != http.StatusOK || got != want {
				t.Fatalf("%s of %d bytes (chunked %v): %d %.80q, want 200 and the body echoed whole", tc.method, len(tc.body), tc.chunked, code, got)
			}
		}
		if dropped.Load() == before {
			t.Fatalf("%s: the resetting endpoint was never tried", tc.method)
		}
	}
	for _, tc := range []struct {
		method, body string
		chunked      bool
	}{
		{http.MethodPost, small, false},
		{http.MethodPatch, small, true},
		{http.MethodPut, large, false},
		{http.MethodPut, large, true},
	} {
		before, postsBefore := dropped.Load(), posts.Load()
		var failed int
		for range 2 {
			if code, _ := do(tc.method, tc.body, tc.chunked); code == http.StatusBadGateway {
				failed++
			} else if code != http.StatusOK {
				t.Fatalf("%s of %d bytes (chunked %v): %d", tc.method, len(tc.body), tc.chunked, code)
			}
		}
		if failed != 1 || dropped.Load()-before != 1 {
			t.Fatalf("%s of %d bytes (chunked %v): %d of 2 failed, %d reached the resetting endpoint; want 1 and 1",
				tc.method, len(tc.body), tc.chunked, failed, dropped.Load()-before)
		}
		if tc.method != http.MethodPut && posts.Load()-postsBefore != 1 {
			t.Fatalf("%s reached the live endpoint %d times, want once", tc.method, posts.Load()-postsBefore)
		}
	}
}

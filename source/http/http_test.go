package http

import (
	"context"
	"errors"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/testtool"
)

const interval = 20 * time.Second

func configMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: \"" + value + "\"\n"
}

// server serves one document, with the validators a test chooses, and
// records the conditional headers of every request.
type server struct {
	srv *httptest.Server

	mu           sync.Mutex
	body         string
	status       int
	etag         string
	lastModified time.Time
	requests     []nethttp.Header
}

func newServer(t *testing.T) *server {
	s := &server{status: nethttp.StatusOK}
	s.srv = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests = append(s.requests, r.Header.Clone())
		if s.status != nethttp.StatusOK {
			nethttp.Error(w, "broken", s.status)
			return
		}
		if s.etag != "" {
			w.Header().Set("ETag", s.etag)
		}
		// ServeContent answers If-None-Match and If-Modified-Since.
		nethttp.ServeContent(w, r, "", s.lastModified, strings.NewReader(s.body))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) set(f func(s *server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *server) request(i int) nethttp.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i]
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

type harness struct {
	t   *testing.T
	clk *clocktesting.FakeClock
	src *HTTP
	out chan source.Revision
}

func start(t *testing.T, value string) *harness {
	t.Helper()
	spec, err := source.Parse(value)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, clk: clocktesting.NewFakeClock(time.Unix(1000, 0)), out: make(chan source.Revision)}
	if h.src, err = New(spec, Options{Clock: h.clk}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.src.Run(ctx, h.out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return h
}

func (h *harness) receive() source.Revision {
	h.t.Helper()
	select {
	case r := <-h.out:
		return r
	case <-time.After(10 * time.Second):
		h.t.Fatal("no revision within 10s")
		return source.Revision{}
	}
}

// poll lets step pass once the source waits on its clock, and returns
// the revision the check sent, or false when it sent none.
func (h *harness) poll(s *server, step time.Duration) (source.Revision, bool) {
	h.t.Helper()
	h.waitArmed()
	n := s.count()
	h.clk.Step(step)
	var r source.Revision
	sent := false
	testtool.WaitFor(h.t, 10*time.Second, "a check", func() error {
		if s.count() != n && h.clk.Waiters() != 0 {
			return nil
		}
		select {
		case r = <-h.out:
			sent = true
			return nil
		default:
		}
		return errors.New("no check ended yet")
	})
	if sent {
		return r, true
	}
	select { // armed again: a revision, if any, is being sent
	case r := <-h.out:
		return r, true
	case <-time.After(200 * time.Millisecond):
		return source.Revision{}, false
	}
}

func (h *harness) waitArmed() {
	h.t.Helper()
	testtool.WaitFor(h.t, 10*time.Second, "the source to arm a timer", func() error {
		if h.clk.Waiters() == 0 {
			return errors.New("no timer armed")
		}
		return nil
	})
}

func names(r source.Revision) string {
	var s []string
	for _, d := range r.Objects {
		s = append(s, d.Object.GetName())
	}
	return strings.Join(s, " ")
}

func TestHTTPETag(t *testing.T) {
	s := newServer(t)
	s.set(func(s *server) { s.body, s.etag = configMap("a", "1"), `"v1"` })
	h := start(t, s.srv.URL+"/fleet.yaml")

	first := h.receive()
	if !first.OK() || names(first) != "a" || !strings.HasPrefix(first.ID, "sha256:") {
		t.Fatalf("first revision %+v", first)
	}
	if got := first.Objects[0].File; got != s.srv.URL+"/fleet.yaml" {
		t.Errorf("objects are in the file %q; want the URL", got)
	}
	if s.request(0).Get("If-None-Match") != "" {
		t.Error("the first request was conditional")
	}

	// Unchanged: a 304, no revision.
	if r, ok := h.poll(s, interval*11/10); ok {
		t.Fatalf("a 304 sent %+v", r)
	}
	if got := s.request(1).Get("If-None-Match"); got != `"v1"` {
		t.Errorf("If-None-Match %q; want \"v1\"", got)
	}

	// A trigger after a 304 sends the revision again, whole.
	h.src.Trigger()
	if r := h.receive(); r.ID != first.ID || names(r) != "a" {
		t.Fatalf("trigger after a 304: %+v", r)
	}

	// Changed: a new revision.
	s.set(func(s *server) { s.body, s.etag = configMap("b", "1"), `"v2"` })
	r, ok := h.poll(s, interval*11/10)
	if !ok || r.ID == first.ID || names(r) != "b" {
		t.Fatalf("after a change: %v %+v", ok, r)
	}
}

func TestHTTPLastModified(t *testing.T) {
	s := newServer(t)
	modified := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s.set(func(s *server) { s.body, s.lastModified = configMap("a", "1"), modified })
	h := start(t, s.srv.URL+"/fleet.yaml")
	h.receive()
	if r, ok := h.poll(s, interval*11/10); ok {
		t.Fatalf("a 304 sent %+v", r)
	}
	req := s.request(1)
	if got, want := req.Get("If-Modified-Since"), modified.Format(nethttp.TimeFormat); got != want {
		t.Errorf("If-Modified-Since %q; want %q", got, want)
	}
	if req.Get("If-None-Match") != "" {
		t.Error("If-None-Match sent without an ETag")
	}
	s.set(func(s *server) { s.body, s.lastModified = configMap("b", "1"), modified.Add(time.Hour) })
	if r, ok := h.poll(s, interval*11/10); !ok || names(r) != "b" {
		t.Fatalf("after a change: %v %+v", ok, r)
	}
}

// TestHTTPTriggerFetchesWhole checks that a triggered sync asks for the
// document without validators: a server whose Last-Modified has
// one-second granularity answers 304 to a change made within the second,
// and the source would stay on the old revision. Polls stay conditional.
func TestHTTPTriggerFetchesWhole(t *testing.T) {
	s := newServer(t)
	modified := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s.set(func(s *server) { s.body, s.lastModified = configMap("a", "1"), modified })
	h := start(t, s.srv.URL+"/fleet.yaml")
	h.receive()

	// Changed within the same second: Last-Modified does not move.
	s.set(func(s *server) { s.body = configMap("b", "1") })
	n := s.count()
	h.src.Trigger()
	if r := h.receive(); names(r) != "b" {
		t.Fatalf("trigger after a change within the second: %+v", r)
	}
	if req := s.request(n); req.Get("If-Modified-Since") != "" || req.Get("If-None-Match") != "" {
		t.Errorf("the triggered request was conditional: %v", req)
	}

	if r, ok := h.poll(s, interval*11/10); ok {
		t.Fatalf("a 304 sent %+v", r)
	}
	if got := s.request(s.count() - 1).Get("If-Modified-Since"); got != modified.Format(nethttp.TimeFormat) {
		t.Errorf("the poll after a trigger sent If-Modified-Since %q; want %q", got, modified.Format(nethttp.TimeFormat))
	}
}

func TestHTTPServerErrorsAndRecovery(t *testing.T) {
	s := newServer(t)
	s.set(func(s *server) { s.body, s.etag = configMap("a", "1"), `"v1"` })
	h := start(t, s.srv.URL+"/fleet.yaml")
	first := h.receive()

	s.set(func(s *server) { s.status = nethttp.StatusInternalServerError })
	r, ok := h.poll(s, interval*11/10)
	if !ok || r.Err == nil || r.Err.Error() != "GET "+s.srv.URL+"/fleet.yaml: 500 Internal Server Error" || r.ID != first.ID || r.Objects != nil {
		t.Fatalf("a 500: %v %+v", ok, r)
	}
	// Retried after a back-off, not a whole interval.
	if r, ok := h.poll(s, source.RetryInitial*12/10); !ok || r.Err == nil {
		t.Fatalf("the retry: %v %+v", ok, r)
	}
	s.set(func(s *server) { s.status = nethttp.StatusOK })
	r, ok = h.poll(s, source.RetryInitial*3)
	if !ok || !r.OK() || r.ID != first.ID || names(r) != "a" {
		t.Fatalf("after recovery: %v %+v", ok, r)
	}
}

func TestHTTPBodyOverTheCap(t *testing.T) {
	s := newServer(t)
	s.set(func(s *server) { s.body = strings.Repeat("#", source.MaxFileSize+1) })
	h := start(t, s.srv.URL+"/big.yaml")
	r := h.receive()
	if r.Err != nil || len(r.Errors) != 1 || r.Errors[0].File != s.srv.URL+"/big.yaml" || !strings.Contains(r.Errors[0].Message, "10 MiB") {
		t.Fatalf("a body over the cap: %+v", r)
	}
	s.set(func(s *server) { s.body = strings.Repeat("#", source.MaxFileSize) })
	if r, ok := h.poll(s, interval*11/10); !ok || !r.OK() {
		t.Fatalf("a body at the cap: %v %+v", ok, r)
	}
}

func TestHTTPDecodeErrorsNameTheURL(t *testing.T) {
	s := newServer(t)
	s.set(func(s *server) {
		s.body = configMap("a", "1") + "---\n" + configMap("a", "2") + "---\napiVersion: v1\nkind: Nope\n"
	})
	h := start(t, s.srv.URL+"/fleet.yaml")
	r := h.receive()
	if len(r.Errors) != 2 {
		t.Fatalf("errors %v; want 2", r.Errors)
	}
	for _, e := range r.Errors {
		if e.File != s.srv.URL+"/fleet.yaml" {
			t.Errorf("error %v does not name the URL", e)
		}
	}
}

func TestHTTPRedirectsLimited(t *testing.T) {
	s := newServer(t)
	s.set(func(s *server) { s.body = configMap("a", "1") })
	mux := nethttp.NewServeMux()
	mux.HandleFunc("/hop/{n}", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n == 0 {
			nethttp.Redirect(w, r, s.srv.URL+"/doc.yaml", nethttp.StatusFound)
			return
		}
		nethttp.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), nethttp.StatusFound)
	})
	hops := httptest.NewServer(mux)
	t.Cleanup(hops.Close)

	if r := start(t, hops.URL+"/hop/4").receive(); !r.OK() || names(r) != "a" {
		t.Errorf("five redirects: %+v", r)
	}
	r := start(t, hops.URL+"/hop/5").receive()
	if r.Err == nil || !strings.Contains(r.Err.Error(), "stopped after 5 redirects") {
		t.Errorf("six redirects: %+v", r)
	}
}

func TestHTTPBasicAuth(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		u, p, _ := r.BasicAuth()
		mu.Lock()
		seen = append(seen, u+":"+p)
		mu.Unlock()
		if u != "bot" || p != "tok" {
			nethttp.Error(w, "no", nethttp.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, configMap("a", "1"))
	}))
	t.Cleanup(srv.Close)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, srv.URL+"/x.yaml?username=bot&password-file="+token).receive()
	if !r.OK() || names(r) != "a" {
		t.Fatalf("with credentials: %+v", r)
	}
	r = start(t, srv.URL+"/x.yaml").receive()
	if r.Err == nil || !strings.Contains(r.Err.Error(), "401 Unauthorized") {
		t.Fatalf("without credentials: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[0] != "bot:tok" {
		t.Errorf("credentials sent %q", seen[0])
	}
}

func TestHTTPNew(t *testing.T) {
	for _, spec := range []source.Spec{
		{Name: "x", Type: source.TypeGit, URL: "https://h/x"},
		{Name: "x", Type: source.TypeHTTP, URL: "ftp://h/x"},
		{Name: "x", Type: source.TypeHTTP, URL: "https://h/x", Options: map[string]string{source.OptionPasswordFile: "/p"}},
	} {
		if _, err := New(spec, Options{}); err == nil {
			t.Errorf("New(%+v) succeeded", spec)
		}
	}
}

package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/apiserver"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

func TestClientMovesToTheNextServer(t *testing.T) {
	s := newServer(t, 0, nil)
	down := testtool.ClosedURL(t)
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: down + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Create(ctx, configMap("a")); err != nil {
		t.Fatalf("a create with the first server down: %v", err)
	}
	if c.Server() != s.ts.URL {
		t.Fatalf("the client sends to %s, want the server that answered, %s", c.Server(), s.ts.URL)
	}
	if _, err := c.Get(ctx, cmKind, "default", "a"); err != nil {
		t.Fatal(err)
	}

	if _, err := client.New(&client.Config{Server: s.ts.URL + ",ftp://x"}); err == nil {
		t.Error("a list with a URL that is not http(s) was taken")
	}
}

// A write whose connection breaks may have been made: it is not sent to
// another server, where a create would be made twice, an update with a
// resourceVersion would conflict with itself and a delete find nothing,
// as client-go sends no write again. A read is.
func TestClientSendsAWriteOnce(t *testing.T) {
	s := newServer(t, 0, nil)
	var writes atomic.Int32
	breaking := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	// HTTP/1.1, whose connection a handler may take and close.
	breaking.TLS = &tls.Config{Certificates: s.ts.TLS.Certificates, NextProtos: []string{"http/1.1"}}
	breaking.StartTLS()
	t.Cleanup(breaking.Close)
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: breaking.URL + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	made, err := s.store.Create(ctx, configMap("there"))
	if err != nil {
		t.Fatal(err)
	}
	changed := made.DeepCopyObject().(*api.ConfigMap)
	changed.Data = map[string]string{"k": "v"}
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"a create", func() error { _, err := c.Create(ctx, configMap("once")); return err }},
		{"an update", func() error { _, err := c.Update(ctx, changed); return err }},
		{"a delete", func() error { _, err := c.Delete(ctx, cmKind, "default", "there", nil); return err }},
	} {
		writes.Store(0)
		if err := w.write(); err == nil {
			t.Errorf("%s on a broken connection succeeded", w.name)
		}
		if n := writes.Load(); n != 1 {
			t.Errorf("%s reached the breaking server %d times, want once", w.name, n)
		}
		if c.Server() != breaking.URL {
			t.Fatalf("after %s, the client moved on to %s", w.name, c.Server())
		}
	}
	if _, err := s.store.Get(cmKind, "default", "once"); err == nil {
		t.Error("the create went to the second server too")
	}
	got, err := s.store.Get(cmKind, "default", "there")
	if err != nil || got.GetResourceVersion() != made.GetResourceVersion() {
		t.Errorf("the update or delete went to the second server too: %v, %v", got, err)
	}
	if _, _, err := c.List(ctx, cmKind, "default", client.ListOptions{}); err != nil {
		t.Fatalf("a list is sent on to the next server: %v", err)
	}
}

// A server that takes requests and never answers (stopped, or cut off
// with its connections open) costs the request that waited on it: the
// ones after it go to the next server, and so do those of a client
// WithTimeout made.
func TestClientMovesOnFromAServerThatDoesNotAnswer(t *testing.T) {
	s := newServer(t, 0, nil)
	release := make(chan struct{})
	silent := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	silent.EnableHTTP2 = true
	silent.TLS = &tls.Config{Certificates: s.ts.TLS.Certificates}
	silent.StartTLS()
	t.Cleanup(func() {
		close(release)
		silent.Close()
	})
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: silent.URL + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	// A second of real time: the next create's, to a new connection to
	// the server that answers, on a loaded machine too.
	beat := c.WithTimeout(time.Second)
	ctx := context.Background()
	if _, err := beat.Create(ctx, configMap("lost")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a create the server never answered: %v", err)
	}
	if _, err := s.store.Get(cmKind, "default", "lost"); err == nil {
		t.Fatal("the create was sent again to the second server")
	}
	if c.Server() != s.ts.URL {
		t.Fatalf("the client sends to %s after a request timed out there, want %s", c.Server(), s.ts.URL)
	}
	if _, err := beat.Create(ctx, configMap("next")); err != nil {
		t.Fatalf("the next create: %v", err)
	}
}

// A server whose port takes connections but which never finishes the TLS
// handshake (its process stopped) was sent nothing: even a create moves
// on to the next server.
func TestClientMovesOnFromAServerThatNeverShakesHands(t *testing.T) {
	s := newServer(t, 0, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	// The server that answers shakes hands within it on a loaded
	// machine too.
	tr.TLSHandshakeTimeout = time.Second
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: "https://" + l.Addr().String() + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), configMap("made")); err != nil {
		t.Fatalf("a create with the first server frozen: %v", err)
	}
	if c.Server() != s.ts.URL {
		t.Fatalf("the client sends to %s, want %s", c.Server(), s.ts.URL)
	}
}

// A server whose dial times out (a machine that is off, whose address
// drops what is sent to it) was sent nothing: the request goes on to the
// next server, a create included, as past a dial refused.
func TestClientMovesOnFromADialThatTimesOut(t *testing.T) {
	s := newServer(t, 0, nil)
	off := testtool.ClosedURL(t)
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if "https://"+addr == off {
			// A dialer whose timeout passed unanswered.
			return (&net.Dialer{Timeout: time.Nanosecond}).DialContext(ctx, network, addr)
		}
		return dial(ctx, network, addr)
	}
	c, err := client.New(&client.Config{Server: off + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), configMap("made")); err != nil {
		t.Fatalf("a create with the first server's dial timing out: %v", err)
	}
	if c.Server() != s.ts.URL {
		t.Fatalf("the client sends to %s, want %s", c.Server(), s.ts.URL)
	}
}

// refusing answers the first n requests of each method with code and a
// Retry-After of one second (as a follower answers while no leader is
// known, or a forward whose outcome is unknown), counting every request,
// and hands the rest to next.
type refusing struct {
	code  int
	n     map[string]int
	tries map[string]int
	mu    sync.Mutex
	next  http.Handler
}

func (h *refusing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.tries[r.Method]++
	refuse := h.tries[r.Method] <= h.n[r.Method]
	h.mu.Unlock()
	if !refuse {
		h.next.ServeHTTP(w, r)
		return
	}
	var se *apierrors.StatusError
	if h.code == http.StatusGatewayTimeout {
		se = apierrors.NewTimeoutError("the leader did not answer", 1)
	} else {
		se = apierrors.NewServiceUnavailable("no control plane leads the cluster yet; try again")
		se.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
	}
	apiserver.WriteError(w, se)
}

func (h *refusing) count(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tries[method]
}

func refusingClient(t *testing.T, code int, n map[string]int, timeout time.Duration) (*server, *refusing, *client.Client, *clocktesting.FakeClock) {
	t.Helper()
	h := &refusing{code: code, n: n, tries: map[string]int{}}
	s := newServer(t, 0, func(next http.Handler) http.Handler {
		h.next = next
		return h
	})
	fc := clocktesting.NewFakeClock(time.Now())
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: s.ts.URL, Token: token, Transport: tr, Clock: fc, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return s, h, c, fc
}

// stepWhileWaiting moves the fake clock on by a second each time the
// client waits on it, until done is closed.
func stepWhileWaiting(fc *clocktesting.FakeClock, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		if fc.HasWaiters() {
			fc.Step(time.Second)
		}
		runtime.Gosched()
	}
}

// A 503 (no leader yet) is a request not carried out: a create, an
// update, a delete and a read are sent again after the Retry-After, on
// the client's clock, until one is answered.
func TestClientRetriesAfterServiceUnavailable(t *testing.T) {
	_, h, c, fc := refusingClient(t, http.StatusServiceUnavailable, map[string]int{
		http.MethodPost: 3, http.MethodGet: 2, http.MethodPut: 2, http.MethodDelete: 2, http.MethodPatch: 1,
	}, 0)
	done := make(chan struct{})
	go stepWhileWaiting(fc, done)
	defer close(done)
	ctx := context.Background()
	start := fc.Now()
	made, err := c.Create(ctx, configMap("a"))
	if err != nil {
		t.Fatalf("a create answered 503 three times: %v", err)
	}
	if n := h.count(http.MethodPost); n != 4 {
		t.Errorf("the create was sent %d times, want 4", n)
	}
	if waited := fc.Since(start); waited < 3*time.Second {
		t.Errorf("the client waited %s on its clock, want the three Retry-Afters of a second", waited)
	}
	if _, err := c.Get(ctx, cmKind, "default", "a"); err != nil {
		t.Fatalf("a read answered 503 twice: %v", err)
	}
	changed := made.DeepCopyObject().(*api.ConfigMap)
	changed.Data = map[string]string{"k": "v"}
	if _, err := c.Update(ctx, changed); err != nil {
		t.Fatalf("an update answered 503 twice: %v", err)
	}
	// A patch is not idempotent (a JSON patch adds to a list): it is
	// sent once.
	if _, err := c.Patch(ctx, cmKind, "default", "a", []byte(`{"data":{"p":"1"}}`)); client.Code(err) != http.StatusServiceUnavailable {
		t.Fatalf("a patch answered 503: %v, want the 503", err)
	}
	if _, err := c.Delete(ctx, cmKind, "default", "a", nil); err != nil {
		t.Fatalf("a delete answered 503 twice: %v", err)
	}
}

// A 504 is an outcome the server does not know: a create is never sent
// again (it may have been made), a read is.
func TestClientSendsACreateOnceOnUnknownOutcome(t *testing.T) {
	s, h, c, fc := refusingClient(t, http.StatusGatewayTimeout, map[string]int{http.MethodPost: 1, http.MethodGet: 1}, 0)
	done := make(chan struct{})
	go stepWhileWaiting(fc, done)
	defer close(done)
	ctx := context.Background()
	_, err := c.Create(ctx, configMap("maybe"))
	if client.Code(err) != http.StatusGatewayTimeout || client.Reason(err) != metav1.StatusReasonTimeout {
		t.Fatalf("a create answered 504: %v, want the 504", err)
	}
	if n := h.count(http.MethodPost); n != 1 {
		t.Fatalf("a create whose outcome is unknown was sent %d times", n)
	}
	if _, err := s.store.Create(ctx, configMap("there")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, cmKind, "default", "there"); err != nil {
		t.Fatalf("a read answered 504 once: %v", err)
	}
}

// The retries end with the request's time: a Retry-After that does not
// fit what is left of it returns the 503 at once.
func TestClientRetriesWithinItsTimeout(t *testing.T) {
	_, h, c, _ := refusingClient(t, http.StatusServiceUnavailable, map[string]int{http.MethodPost: 100}, 500*time.Millisecond)
	_, err := c.Create(context.Background(), configMap("a"))
	if client.Code(err) != http.StatusServiceUnavailable {
		t.Fatalf("a create refused past its timeout: %v, want the 503", err)
	}
	if n := h.count(http.MethodPost); n != 1 {
		t.Fatalf("the create was sent %d times within a timeout shorter than its Retry-After", n)
	}
}

// A 503 from one of several control planes sends the request to the
// next at once (it may know the leader the first does not); the
// Retry-After is waited out once every one has answered 503.
func TestClientAsksTheNextServerAtOnceOnServiceUnavailable(t *testing.T) {
	refusing503 := func(n int) *server {
		h := &refusing{code: http.StatusServiceUnavailable, n: map[string]int{http.MethodPost: n}, tries: map[string]int{}}
		return newServer(t, 0, func(next http.Handler) http.Handler {
			h.next = next
			return h
		})
	}
	for _, tc := range []struct {
		name   string
		refuse []int // the creates each server refuses
		waited time.Duration
	}{
		{"the next server answers", []int{1, 0}, 0},
		{"every server refuses once", []int{1, 1, 1}, time.Second},
		{"one server refuses twice", []int{2}, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var urls []string
			var pool []byte
			for _, n := range tc.refuse {
				s := refusing503(n)
				urls = append(urls, s.ts.URL)
				pool = append(pool, s.caPEM...)
			}
			tr, err := client.NewTransport(&client.Config{CAData: pool})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tr.CloseIdleConnections)
			fc := clocktesting.NewFakeClock(time.Now())
			c, err := client.New(&client.Config{Server: strings.Join(urls, ","), Token: token, Transport: tr, Clock: fc})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go stepWhileWaiting(fc, done)
			defer close(done)
			start := fc.Now()
			if _, err := c.Create(context.Background(), configMap("a")); err != nil {
				t.Fatalf("create: %v", err)
			}
			if waited := fc.Since(start); waited != tc.waited {
				t.Errorf("the client waited %s on its clock, want %s", waited, tc.waited)
			}
		})
	}
}

// refusingCreates answers the next creates, as many as it is told, 503
// with a Retry-After (no leader yet), and hands the rest to next.
type refusingCreates struct {
	n    atomic.Int32
	next http.Handler
}

func (h *refusingCreates) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && h.n.Add(-1) >= 0 {
		se := apierrors.NewServiceUnavailable("no control plane leads the cluster yet; try again")
		se.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		apiserver.WriteError(w, se)
		return
	}
	h.next.ServeHTTP(w, r)
}

// A server that gave no answer (frozen: it takes connections and never
// shakes hands) is set aside: a request the others refuse with 503 goes
// round them rather than back to it, where it would wait out its time
// again, as requests sent round during a failover otherwise do.
func TestClientSetsAsideAServerThatGaveNoAnswer(t *testing.T) {
	refusingServer := func() (*server, *refusingCreates) {
		h := &refusingCreates{}
		return newServer(t, 0, func(next http.Handler) http.Handler {
			h.next = next
			return h
		}), h
	}
	a, aRefuses := refusingServer()
	b, bRefuses := refusingServer()
	frozen, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { frozen.Close() })
	tr, err := client.NewTransport(&client.Config{CAData: append(append([]byte(nil), a.caPEM...), b.caPEM...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	fc := clocktesting.NewFakeClock(time.Now())
	// a, then the frozen one, then b: after a refuses, the frozen one
	// comes next.
	c, err := client.New(&client.Config{Server: a.ts.URL + ",https://" + frozen.Addr().String() + "," + b.ts.URL, Token: token, Transport: tr, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	createWithin := func(d time.Duration, name string) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := c.Create(ctx, configMap(name))
		return err
	}
	aRefuses.n.Store(1)
	if err := createWithin(500*time.Millisecond, "lost"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a create refused by a, then sent to the frozen server: %v, want no answer in time", err)
	}
	if c.Server() != b.ts.URL {
		t.Fatalf("the client sends to %s after the frozen server, want %s", c.Server(), b.ts.URL)
	}
	// b refuses, then a: the frozen server is next after a, and passed
	// over for b.
	aRefuses.n.Store(1)
	bRefuses.n.Store(1)
	if err := createWithin(10*time.Second, "made"); err != nil {
		t.Fatalf("a create refused by b and a: %v, want it made by b", err)
	}
	if _, err := b.store.Get(cmKind, "default", "made"); err != nil {
		t.Fatalf("b does not hold the create: %v", err)
	}
	// Set aside for a while only: past it, the frozen server is tried
	// again in its turn.
	fc.Step(15 * time.Second)
	aRefuses.n.Store(1)
	bRefuses.n.Store(1)
	if err := createWithin(500*time.Millisecond, "late"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a create refused by b, then a, then sent to the frozen server again: %v, want no answer in time", err)
	}
}

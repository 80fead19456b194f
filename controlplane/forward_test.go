package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/etcd"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/testtool"
)

// maxHops is where the test's servers stop a request going round, which
// the forwarders must stop long before.
const maxHops = 8

// followerAPI serves what a follower's API would: a write goes through
// its forwarder, anything else is answered here. It counts the requests
// it gets.
func followerAPI(t *testing.T, ep string, hits *atomic.Int32) (*forwarder, *httptest.Server) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	st := followingStore(t, ep)
	var f *forwarder
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) > maxHops {
			http.Error(w, "the request went round", http.StatusLoopDetected)
			return
		}
		if h := f.route(r); h != nil {
			h.ServeHTTP(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	f = newForwarder(st, ts.URL, pool, tls.Certificate{}, quiet, clock.RealClock{})
	return f, ts
}

// followingStore is a store over the etcd at ep, which follows: no
// control plane leads it.
func followingStore(t *testing.T, ep string) *store.Store {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	b, err := etcd.Open(context.Background(), etcd.Options{Endpoints: []string{ep}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(b, store.Options{Logger: quiet})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Two followers that each take the other for the leader, as they may for
// a moment while leadership changes hands, answer a write 503 after one
// hop rather than sending it round between them.
func TestForwardedWriteIsNotForwardedAgain(t *testing.T) {
	ep := etcdtest.Start(t)
	var hits atomic.Int32
	a, tsA := followerAPI(t, ep, &hits)
	b, tsB := followerAPI(t, ep, &hits)
	a.setLeader(tsB.URL)
	b.setLeader(tsA.URL)
	resp, err := tsA.Client().Post(tsA.URL+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a write between two followers: %d (Retry-After %q), want 503 and a retry", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("the write reached the followers %d times, want twice: the one it came to, and the one it took for the leader", n)
	}
}

// forwarderTo is a follower's forwarder, over a store of its own, to a
// leader whose API handler serves.
func forwarderTo(t *testing.T, handler http.HandlerFunc) (*forwarder, *store.Store) {
	t.Helper()
	return forwarderOn(t, clock.RealClock{}, handler)
}

// forwarderOn is forwarderTo timed by clk.
func forwarderOn(t *testing.T, clk clock.WithDelayedExecution, handler http.HandlerFunc) (*forwarder, *store.Store) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	st, err := store.New(store.Memory{}, store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	leaderAPI := httptest.NewTLSServer(handler)
	t.Cleanup(leaderAPI.Close)
	pool := x509.NewCertPool()
	pool.AddCert(leaderAPI.Certificate())
	f := newForwarder(st, "https://self.test:6443", pool, tls.Certificate{}, quiet, clk)
	f.setLeader(leaderAPI.URL)
	return f, st
}

// forwardCreate sends a create through f; done is closed once it is
// answered into rec.
func forwardCreate(ctx context.Context, f *forwarder) (rec *httptest.ResponseRecorder, done <-chan struct{}) {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/api/v1/namespaces/default/configmaps", strings.NewReader("{}"))
	rec = httptest.NewRecorder()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		f.ServeHTTP(rec, req)
	}()
	return rec, answered
}

// A write under way to a leader that never answers (its machine frozen,
// or cut off) ends once another control plane takes over, with a 504:
// the old leader had the write, and may have made it, so the client is
// told the outcome is unknown rather than invited to make it again.
func TestForwardedWriteEndsWhenTheLeaderChanges(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	f, _ := forwarderTo(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec, done := forwardCreate(ctx, f)
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("the write never reached the leader")
	}
	f.setLeader("https://next.test:6443")
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the write still waits on the old leader after another took over")
	}
	if rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), "may still be processing the request") ||
		!strings.Contains(rec.Body.String(), "another control plane took over") || !strings.Contains(rec.Body.String(), `"reason":"Timeout"`) {
		t.Fatalf("answer %d %q, want 504 Timeout", rec.Code, rec.Body.String())
	}
}

// A write that never reached the leader (nothing listens at its address)
// was not made: 503 with a Retry-After, which a client sends again.
func TestForwardedWriteThatNeverReachedTheLeaderIsUnavailable(t *testing.T) {
	f, _ := forwarderTo(t, func(w http.ResponseWriter, r *http.Request) {
		t.Error("the write reached a leader it should not have")
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f.setLeader("https://" + addr)
	rec, done := forwardCreate(context.Background(), f)
	<-done
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "cannot be reached") {
		t.Fatalf("answer %d %q, Retry-After %q, want 503 and a retry", rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
	}
}

// A write the leader answered before another control plane took over was
// made: its answer is passed on whole, rather than cut off as one the old
// leader never gave, which the client would take for a write that may or
// may not have been made.
func TestForwardedWriteAnsweredBeforeTheLeaderChangesIsPassedOn(t *testing.T) {
	var made atomic.Uint64
	release := make(chan struct{})
	f, st := forwarderTo(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(apiserver.RevisionHeader, strconv.FormatUint(made.Load(), 10))
		w.WriteHeader(http.StatusCreated)
		w.(http.Flusher).Flush()
		select {
		case <-release:
			io.WriteString(w, `{"made":true}`)
		case <-r.Context().Done():
		}
	})
	made.Store(st.Revision() + 1)
	answered := make(chan struct{})
	caughtUp := f.proxy.ModifyResponse
	f.proxy.ModifyResponse = func(resp *http.Response) error {
		close(answered)
		return caughtUp(resp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec, done := forwardCreate(ctx, f)
	select {
	case <-answered:
	case <-ctx.Done():
		t.Fatal("the leader's answer never came")
	}
	f.setLeader("https://next.test:6443")
	// The follower's store gets the write, and the leader the rest of
	// its answer out.
	if _, err := st.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "made"}}); err != nil {
		t.Fatal(err)
	}
	close(release)
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the answer was never passed on")
	}
	if rec.Code != http.StatusCreated || rec.Body.String() != `{"made":true}` {
		t.Fatalf("answer %d %q, want the leader's 201 and its body", rec.Code, rec.Body.String())
	}
}

// A write to a leader that froze after it had the write is not held for
// the lease: past forwardTimeout on the follower's clock the client
// hears 504, the outcome unknown, well within the 5s it may allow.
func TestForwardedWriteToAFrozenLeaderEndsInTime(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	f, _ := forwarderOn(t, clk, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	rec, done := forwardCreate(context.Background(), f)
	<-arrived
	select {
	case <-done:
		t.Fatal("answered before the forward timeout")
	default:
	}
	clk.Step(forwardTimeout)
	<-done
	if rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), "no answer within") {
		t.Fatalf("answer %d %q, want 504 naming the forward timeout", rec.Code, rec.Body.String())
	}
}

// A leader frozen before it took the connection (the kernel accepts it,
// nothing answers the TLS handshake) never had the write: past
// forwardTimeout, 503 with Retry-After, which a client sends again.
func TestForwardedWriteToALeaderThatNeverAcceptsIsUnavailable(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f, _ := forwarderOn(t, clk, func(w http.ResponseWriter, r *http.Request) {
		t.Error("the write reached a leader that never accepts")
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f.setLeader("https://" + l.Addr().String())
	rec, done := forwardCreate(context.Background(), f)
	testtool.WaitFor(t, 10*time.Second, "the forward timer", func() error {
		if !clk.HasWaiters() {
			return errors.New("no timer yet")
		}
		return nil
	})
	clk.Step(forwardTimeout)
	<-done
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "no answer within") {
		t.Fatalf("answer %d %q, Retry-After %q, want 503 and a retry", rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
	}
}

package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/testtool"
)

// said is a log handler that closes a channel once a message is logged.
type said struct {
	msg  string
	once chan struct{}
}

func (h *said) Enabled(context.Context, slog.Level) bool { return true }
func (h *said) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case <-h.once:
		default:
			close(h.once)
		}
	}
	return nil
}
func (h *said) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *said) WithGroup(string) slog.Handler      { return h }

// leaders are API servers that stand for leaders, each answering with
// its handler, and a forwarder timed by clk, over store st, that trusts
// them.
func leaders(t *testing.T, st *store.Store, clk *clocktesting.FakeClock, log *slog.Logger, handlers ...http.HandlerFunc) (*forwarder, []string) {
	t.Helper()
	pool := x509.NewCertPool()
	var urls []string
	for _, h := range handlers {
		ts := httptest.NewUnstartedServer(h)
		ts.EnableHTTP2 = true
		ts.StartTLS()
		t.Cleanup(ts.Close)
		pool.AddCert(ts.Certificate())
		urls = append(urls, ts.URL)
	}
	return newForwarder(st, "https://self.test:6443", pool, tls.Certificate{}, log, clk), urls
}

// holdingForwarder is leaders over a store of its own, on a fake clock,
// with a channel closed once the forwarder holds a write for the next
// leader.
func holdingForwarder(t *testing.T, handlers ...http.HandlerFunc) (*forwarder, []string, <-chan struct{}) {
	t.Helper()
	st, err := store.New(store.Memory{}, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	holding := &said{msg: "holding a write the leader never had for the next leader", once: make(chan struct{})}
	f, urls := leaders(t, st, clocktesting.NewFakeClock(time.Now()), slog.New(holding), handlers...)
	return f, urls, holding.once
}

// made answers a write 201 with the body it got.
func made(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.WriteHeader(http.StatusCreated)
	w.Write(body)
}

// A write that comes to a follower while no leader is known (one is
// being elected) is held, not answered 503, and sent on the moment a
// leader is announced: the client waits for the election, not for the
// Retry-After of a 503.
func TestWriteHeldUntilALeaderIsKnown(t *testing.T) {
	st := followingStore(t, etcdtest.Start(t))
	if !st.Following() {
		t.Fatal("the store over etcd does not follow")
	}
	clk := clocktesting.NewFakeClock(time.Now())
	f, urls := leaders(t, st, clk, slog.New(slog.DiscardHandler), made)
	serve := func() (*httptest.ResponseRecorder, <-chan struct{}) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/configmaps", strings.NewReader(`{"n":1}`))
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if h := f.route(req); h != nil {
				h.ServeHTTP(rec, req)
			} else {
				t.Error("a follower's write was not routed to the leader")
			}
		}()
		return rec, done
	}
	waitHeld := func() {
		testtool.WaitFor(t, 10*time.Second, "the write to be held", func() error {
			if !clk.HasWaiters() {
				return errors.New("not held yet")
			}
			return nil
		})
	}

	rec, done := serve()
	waitHeld()
	f.setLeader(urls[0])
	<-done
	if rec.Code != http.StatusCreated || rec.Body.String() != `{"n":1}` {
		t.Fatalf("a write held until the leader was known: %d %q, want the leader's 201", rec.Code, rec.Body.String())
	}

	// Held for leaderWait at most, then 503 with a Retry-After.
	f.setLeader("")
	rec, done = serve()
	waitHeld()
	clk.Step(leaderWait)
	<-done
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "no control plane leads") {
		t.Fatalf("a write held while no leader came: %d %q, want 503 and a retry", rec.Code, rec.Body.String())
	}
}

// A write the leader answered 503 with a Retry-After (it resigned as it
// stops, and took no more writes) was not made: the follower holds it
// and sends it, body and all, to the next leader, rather than pass the
// 503 on while another leader is being announced.
func TestWriteTheLeaderRefusedGoesToTheNext(t *testing.T) {
	f, urls, holding := holdingForwarder(t,
		func(w http.ResponseWriter, r *http.Request) {
			apiserver.WriteError(w, unavailable("this control plane resigned the lead as it stops"))
		},
		made)
	f.setLeader(urls[0])
	rec, done := forwardCreate(context.Background(), f)
	<-holding
	select {
	case <-done:
		t.Fatalf("answered %d %q before another leader came", rec.Code, rec.Body.String())
	default:
	}
	f.setLeader(urls[1])
	<-done
	if rec.Code != http.StatusCreated || rec.Body.String() != "{}" {
		t.Fatalf("a write the leader refused, with the next one known: %d %q, want the next one's 201 and the body", rec.Code, rec.Body.String())
	}
}

// A write that could not reach the leader (it died) is held and sent to
// the leader elected after it.
func TestWriteThatNeverReachedTheLeaderGoesToTheNext(t *testing.T) {
	f, urls, holding := holdingForwarder(t, made)
	f.setLeader(testtool.ClosedURL(t))
	rec, done := forwardCreate(context.Background(), f)
	<-holding
	f.setLeader(urls[0])
	<-done
	if rec.Code != http.StatusCreated || rec.Body.String() != "{}" {
		t.Fatalf("a write that never reached the dead leader: %d %q, want the next one's 201", rec.Code, rec.Body.String())
	}
}

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-dev/berth/apiserver/auth"
)

// inflightLimiter caps the requests one identity may have in flight, so
// that one runaway agent or script cannot starve the rest: beyond the cap
// it is told to come back (429 with Retry-After), as Kubernetes' priority
// and fairness does. Watches do not count: they are long-lived by design.
type inflightLimiter struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newInflightLimiter(max int) *inflightLimiter {
	return &inflightLimiter{max: max, n: map[string]int{}}
}

// acquire takes a slot for the identity, or reports false when it has
// none left.
func (l *inflightLimiter) acquire(who string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[who] >= l.max {
		return false
	}
	l.n[who]++
	return true
}

func (l *inflightLimiter) release(who string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[who] <= 1 {
		delete(l.n, who)
		return
	}
	l.n[who]--
}

// seats caps the requests of one class in flight across every caller,
// as kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight do: beyond it a request is told to
// come back (429 with Retry-After) at once, rather than queue for memory.
// A nil seats has no cap.
type seats chan struct{}

func newSeats(n int) seats {
	if n <= 0 {
		return nil
	}
	return make(seats, n)
}

// take takes a seat, or reports false when there is none.
func (s seats) take() bool {
	if s == nil {
		return true
	}
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s seats) give() {
	if s != nil {
		<-s
	}
}

// seatsFor is the class a request takes a seat of: reads (get, list) or
// writes. Nodes take none: their heartbeats, leases and status writes
// must never wait behind users' reads, as API Priority and Fairness keeps
// them a level of their own (system-node-high). Their own cap per
// identity still holds. Watches and streams (logs, exec, proxy) take
// none either: they last, and are not counted by Kubernetes' limits.
func (s *Server) seatsFor(req *resourceRequest) (seats, string) {
	if req.id != nil && req.id.Kind == auth.IdentityNode {
		return nil, ""
	}
	switch req.verb {
	case auth.VerbGet, auth.VerbList:
		return s.readSeats, "read"
	}
	return s.writeSeats, "mutating"
}

// byteBudgetWait is how long an answer waits for its bytes when its
// class's budget is spent, before it is told to come back.
const byteBudgetWait = time.Second

// byteBudget bounds the encoded bytes of the answers of one class being
// written at once: an answer takes its length while it goes to the
// client, and gives it back when the write ends, so that slow or stalled
// readers of large objects hold at most this much, however many they are.
// A nil budget has no bound.
type byteBudget struct {
	sem *semaphore.Weighted
	max int64
}

func newByteBudget(max int64) *byteBudget {
	if max <= 0 {
		return nil
	}
	return &byteBudget{sem: semaphore.NewWeighted(max), max: max}
}

// take takes n bytes, waiting for them until ready ends. An answer larger
// than the whole budget takes all of it: it is served alone rather than
// never. It reports the bytes taken, and false when they did not come.
func (b *byteBudget) take(ready context.Context, n int64) (int64, bool) {
	n = min(n, b.max)
	if b.sem.TryAcquire(n) {
		return n, true
	}
	if b.sem.Acquire(ready, n) != nil {
		return 0, false
	}
	return n, true
}

func (b *byteBudget) give(n int64) { b.sem.Release(n) }

// budgetFor is the byte budget of a request: reads' or writes'. Nodes
// have none, as they take no seat (see seatsFor): a node's heartbeat
// never waits for users' reads to drain.
func (s *Server) budgetFor(req *resourceRequest) *byteBudget {
	if req.id != nil && req.id.Kind == auth.IdentityNode {
		return nil
	}
	switch req.verb {
	case auth.VerbGet, auth.VerbList:
		return s.readBytes
	}
	return s.writeBytes
}

// budgetedWriter is the writer of a request whose answer takes bytes of
// a budget; writeEncoded takes them.
type budgetedWriter struct {
	http.ResponseWriter
	s      *Server
	ctx    context.Context
	budget *byteBudget
	class  string
}

// take takes n bytes of the budget, waiting at most byteBudgetWait on the
// server's clock for a read's answer and as long as the request lasts for
// a write's; it returns what to give back, or the 429 to answer.
func (w *budgetedWriter) take(n int64) (func(), error) {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	if w.budget != w.s.writeBytes {
		t := w.s.clock.AfterFunc(byteBudgetWait, cancel)
		defer t.Stop()
	}
	// A write's answer comes after the write is made: a 429 then would
	// ask the client to make it again (a create would meet itself), so
	// it waits for its bytes as long as its request lasts.
	got, ok := w.budget.take(ctx, n)
	if !ok {
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf("too many bytes of %s answers in flight on the server (at most %d): retry later", w.class, w.budget.max), 1)
	}
	return func() { w.budget.give(got) }, nil
}

func (w *budgetedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *budgetedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// tooManyInflight is the 429 of a class with every seat taken.
func tooManyInflight(class string, max int) error {
	return apierrors.NewTooManyRequests(fmt.Sprintf("too many %s requests in flight on the server (at most %d): retry later", class, max), 1)
}

// tooManyRequests is the 429 of an identity over its cap.
func tooManyRequests(who string, max int) error {
	return apierrors.NewTooManyRequests(fmt.Sprintf("too many requests in flight for %s (at most %d): retry later", who, max), 1)
}

// tooManyResets is the 429 of a request on a connection that has reset
// more streams than it may (see resets.go).
func tooManyResets() error {
	return apierrors.NewTooManyRequests("this connection has reset too many streams: connect again", 1)
}

func unauthorized(msg string) error {
	return apierrors.NewUnauthorized("Unauthorized: " + msg)
}

// bodyTooLarge is the 413 of a body over the cap.
func bodyTooLarge(max int64) error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the request body is larger than %d bytes", max))
}

// isTooLarge reports whether reading a body failed on http.MaxBytesReader.
func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// statusWriter remembers the status code a handler wrote, for metrics and
// to know whether a panic can still be answered. It passes Flush through
// (watches need it) and unwraps for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	// revision, when set, is read into RevisionHeader as the answer
	// begins.
	revision func() uint64
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.begin(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.begin(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) begin(code int) {
	w.status = code
	w.wrote = true
	if w.revision != nil {
		w.Header().Set(RevisionHeader, strconv.FormatUint(w.revision(), 10))
	}
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.status
}

// requestRecord is what the resource handler learns about a request (its
// verb and resource) for the metrics layer outside it.
type requestRecord struct {
	verb     string
	resource string
	// long marks a watch, which the latency histogram leaves out.
	long bool
}

type recordKey struct{}

func recordOf(r *http.Request) *requestRecord {
	if rec, ok := r.Context().Value(recordKey{}).(*requestRecord); ok {
		return rec
	}
	return &requestRecord{}
}

// verbOfMethod names a non-resource request's verb for metrics.
func verbOfMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return auth.VerbGet
	case http.MethodPost:
		return auth.VerbCreate
	case http.MethodPut:
		return auth.VerbUpdate
	case http.MethodPatch:
		return auth.VerbPatch
	case http.MethodDelete:
		return auth.VerbDelete
	}
	return strings.ToLower(method)
}

func stack() string { return string(debug.Stack()) }

package apiserver

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// A watch streams newline-delimited events, {"type":…,"object":…}, with
// Kubernetes' resourceVersion semantics:
//
//   - unset or "0": the current state as ADDED events, then every change
//     after it ("get state and start at most recent");
//   - N: every change after revision N; a revision the change log no longer
//     holds is an ERROR event with a 410 Status (the client lists again);
//     one the store has not reached is waited for a moment, then 504;
//   - sendInitialEvents=true: the current state first whatever N, ended by
//     a BOOKMARK annotated k8s.io/initial-events-end when bookmarks were
//     asked for.
//
// allowWatchBookmarks=true adds a BOOKMARK every BookmarkInterval carrying
// the revision the watch has caught up to, so that a quiet watch can
// resume from a recent revision. timeoutSeconds (else Config.WatchTimeout)
// and Shutdown end the stream cleanly.

// maxWatchTimeout is the longest timeoutSeconds a watch gets: the longest
// time.Duration, in whole seconds (about 292 years). A larger one is
// clamped to it.
const maxWatchTimeout = time.Duration(1<<63-1) / time.Second * time.Second

// serveWatch runs one watch until it ends.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	format, err := negotiateFormat(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	q := r.URL.Query()
	sel, err := parseSelection(req.kind, req.namespace, q)
	if err != nil {
		WriteError(w, err)
		return
	}
	if req.name != "" {
		sel.withName(req.name)
	}
	if err := s.authorizeSelection(r.Context(), req, sel); err != nil {
		WriteError(w, err)
		return
	}
	rvParam := q.Get("resourceVersion")
	rv, err := parseResourceVersion(rvParam)
	if err != nil {
		WriteError(w, err)
		return
	}
	timeout := s.cfg.WatchTimeout
	if ts := q.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || n < 0 {
			WriteError(w, badRequest("invalid timeoutSeconds %q", ts))
			return
		}
		if n > 0 {
			// Past maxWatchTimeout the nanoseconds would overflow into a
			// negative timeout that ends the watch at once.
			timeout = time.Duration(min(n, int64(maxWatchTimeout/time.Second))) * time.Second
		}
	}
	var t *tabler
	if format == formatTable {
		if t, err = s.newTabler(r, req.kind); err != nil {
			WriteError(w, err)
			return
		}
	}
	ws := &watchStream{
		s:         s,
		kind:      req.kind,
		sel:       sel,
		bookmarks: q.Get("allowWatchBookmarks") == "true",
		initial:   q.Get("sendInitialEvents") == "true" || (rv == 0 && q.Get("sendInitialEvents") != "false"),
		endMarker: q.Get("sendInitialEvents") == "true",
		rev:       rv,
		timeout:   timeout,
		table:     t,
		serve:     req.served,
	}
	if !s.beginStream() {
		WriteError(w, apierrors.NewServiceUnavailable("the server is shutting down"))
		return
	}
	defer s.streams.Done()
	ws.run(w, r)
}

// beginStream counts a watch in, unless Shutdown has begun.
func (s *Server) beginStream() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown() {
		return false
	}
	s.streams.Add(1)
	return true
}

// watchStream is one watch being served.
type watchStream struct {
	s         *Server
	kind      *api.Kind
	serve     func(api.Object) api.Object
	sel       *selection
	bookmarks bool
	initial   bool
	endMarker bool
	rev       uint64
	timeout   time.Duration
	table     *tabler

	// period is cancelled to wake the event loop for a bookmark.
	mu     sync.Mutex
	period context.CancelFunc
}

func (ws *watchStream) run(w http.ResponseWriter, r *http.Request) {
	s := ws.s
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if replaced := ws.kind.Replaced(); replaced != nil {
		// A custom kind whose CRD changed or went: its watches end, as
		// in Kubernetes, and clients watch the new kind.
		go func() {
			select {
			case <-replaced:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	opts := store.WatchOptions{Kind: ws.kind, Filter: ws.sel.filter, Revision: ws.rev}
	var snap *store.Snapshot
	if ws.initial {
		// Watch from now, then read the snapshot, which is at least as new
		// (the store publishes a snapshot before it dispatches its
		// events): changes up to the snapshot are in it, the ones after
		// come through the watcher, nothing is lost or repeated.
		if err := s.waitForRevision(ctx, ws.rev); err != nil {
			WriteError(w, err)
			return
		}
		opts.Revision = 0
	}
	watcher, err := s.startWatch(ctx, opts)
	var ew *eventWriter
	switch {
	case store.IsGone(err):
		ew = newEventWriter(w, nil)
		st := StatusOf(apierrors.NewResourceExpired("too old resource version: " + strconv.FormatUint(ws.rev, 10)))
		_ = ew.write("ERROR", &st)
		_ = ew.flush()
		return
	case err != nil:
		WriteError(w, err)
		return
	}
	defer watcher.Stop()
	s.metrics.watches.WithLabelValues(ws.kind.Resource).Inc()
	defer s.metrics.watches.WithLabelValues(ws.kind.Resource).Dec()

	ew = newEventWriter(w, ws.table)
	ew.serve = ws.serve
	after := ws.rev
	if ws.initial {
		snap = s.store.Snapshot()
		after = snap.Revision()
		var werr error
		err := snap.Each(ws.kind, ws.sel.filter, func(o api.Object) bool {
			werr = ew.writeStored("ADDED", o)
			return werr == nil
		})
		if err != nil || werr != nil {
			return
		}
		if ws.endMarker && ws.bookmarks {
			if ew.writeRaw("BOOKMARK", bookmarkObject(ws.kind, after, true)) != nil {
				return
			}
		}
	}
	if ew.flush() != nil {
		return
	}

	// The first period exists before the first bookmark timer can end it.
	periodCtx := ws.newPeriod(ctx)
	defer ws.startTiming(cancel)()
	sent := after
	for {
		e, err := watcher.Next(periodCtx)
		if err != nil {
			if ctx.Err() != nil || !errors.Is(err, context.Canceled) || periodCtx.Err() == nil {
				// The client left, the timeout came, Shutdown began, or
				// the store ended the watch (closed, or this watcher fell
				// too far behind): end the stream; the client watches
				// again from the last revision it saw.
				_ = ew.flush()
				return
			}
			// A bookmark is due. The watcher has nothing queued when
			// Bookmark answers, and every event taken from it has been
			// written, so the revision it gives comes after them all.
			if rev, ok := watcher.Bookmark(); ok && rev > sent {
				if ew.writeRaw("BOOKMARK", bookmarkObject(ws.kind, rev, false)) != nil || ew.flush() != nil {
					return
				}
				sent = rev
			}
			periodCtx = ws.newPeriod(ctx)
			continue
		}
		if e.Revision <= after {
			continue // already in the initial snapshot
		}
		if ew.writeStored(string(e.Type), e.Object) != nil {
			return
		}
		sent = e.Revision
		// Flush when nothing more is waiting, so a burst goes out in few
		// writes and a lone event at once.
		if _, idle := watcher.Bookmark(); idle {
			if ew.flush() != nil {
				return
			}
		}
	}
}

// startWatch starts a store watch, waiting a little for a revision the
// store has not reached yet (a follower behind the leader that a client
// read from).
func (s *Server) startWatch(ctx context.Context, opts store.WatchOptions) (*store.Watcher, error) {
	deadline := s.clock.Now().Add(futureRevisionWait)
	for {
		w, err := s.store.Watch(ctx, opts)
		if !errors.Is(err, store.ErrFutureRevision) {
			return w, err
		}
		if !s.clock.Now().Before(deadline) {
			return nil, tooLargeResourceVersion(opts.Revision, s.store.Revision())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.clock.After(time.Millisecond):
		}
	}
}

// newPeriod makes the context the event loop waits under until the next
// bookmark is due.
func (ws *watchStream) newPeriod(ctx context.Context) context.Context {
	if !ws.bookmarks {
		return ctx
	}
	pctx, cancel := context.WithCancel(ctx)
	ws.mu.Lock()
	ws.period = cancel
	ws.mu.Unlock()
	return pctx
}

// startTiming arms what ends the stream (by calling end) at its timeout
// or at Shutdown, and what wakes it for each bookmark: timers and a
// context callback, no goroutine of the stream's own (a server with 5,000
// agents' watches kept 5,000 goroutines for this). The function it
// returns disarms them.
func (ws *watchStream) startTiming(end context.CancelFunc) (stop func()) {
	s := ws.s
	timeout := s.clock.AfterFunc(ws.timeout, end)
	stopShutdown := context.AfterFunc(s.stopCtx, end)
	var (
		mu       sync.Mutex
		stopped  bool
		bookmark clock.Timer
		arm      func()
	)
	// arm sets the next bookmark's timer; it runs with mu held. A timer's
	// function may run under its clock's lock (a fake clock's does), so it
	// sets the next one from a goroutine that lives only for that.
	arm = func() {
		bookmark = s.clock.AfterFunc(s.cfg.BookmarkInterval, func() {
			ws.mu.Lock()
			if ws.period != nil {
				ws.period()
			}
			ws.mu.Unlock()
			go func() {
				mu.Lock()
				defer mu.Unlock()
				if !stopped {
					arm()
				}
			}()
		})
	}
	if ws.bookmarks {
		mu.Lock()
		arm()
		mu.Unlock()
	}
	return func() {
		timeout.Stop()
		stopShutdown()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if bookmark != nil {
			bookmark.Stop()
		}
	}
}

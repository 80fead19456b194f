package store

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/berth-dev/berth/api"
)

// EventType says what happened to an object.
type EventType string

// Event types, spelled as the Kubernetes watch API spells them.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
)

// Event is one change to one object.
type Event struct {
	Type     EventType
	Revision uint64
	Kind     *api.Kind
	// Object is the new state; for Deleted, the last state.
	Object api.Object
	// Old is the state before a Modified or Deleted event.
	Old api.Object
}

// WatchOptions choose what a watcher sees.
type WatchOptions struct {
	Kind *api.Kind
	// Filter selects objects. A watcher filtered by an index (for example
	// the pods of one node) is woken only by changes to objects indexed
	// under its value, before or after the change.
	Filter Filter
	// Revision: deliver every change after this revision. 0 means from
	// now on. Older than the change log keeps: ErrGone.
	Revision uint64
}

// Watch starts a watch. Events come in revision order through Next. An
// object that starts or stops matching the filter is seen as Added or
// Deleted, as Kubernetes watches do.
func (s *Store) Watch(ctx context.Context, opts WatchOptions) (*Watcher, error) {
	return s.hub.watch(ctx, opts, s.Revision())
}

// hub keeps the change log and routes events to watchers.
type hub struct {
	mu sync.Mutex
	// log is a ring of the newest events; compacted is the newest revision
	// some of whose events have been dropped from it.
	log       []Event
	start, n  int
	compacted uint64
	// dispatched is the newest revision handed to every watcher.
	dispatched atomic.Uint64
	byKind     map[*api.Kind]*kindWatchers
	queueLimit int
	closed     error
}

// kindWatchers holds the watchers of one kind: those filtered by an index
// value in indexed, every other one in all.
type kindWatchers struct {
	all     map[*Watcher]struct{}
	indexed map[string]map[string]map[*Watcher]struct{} // index → value → set
}

func newHub(rev uint64, history, queueLimit int) *hub {
	h := &hub{
		log:        make([]Event, history),
		compacted:  rev,
		byKind:     map[*api.Kind]*kindWatchers{},
		queueLimit: queueLimit,
	}
	h.dispatched.Store(rev)
	return h
}

func (h *hub) append(e Event) {
	if h.n == len(h.log) {
		h.compacted = h.log[h.start].Revision
		h.log[h.start] = Event{}
		h.start = (h.start + 1) % len(h.log)
		h.n--
	}
	h.log[(h.start+h.n)%len(h.log)] = e
	h.n++
}

// watch starts a watcher. published is the newest revision readers
// see: a store publishes a commit before it dispatches its events, so a
// revision a reader was just given (a list's, a snapshot's) may not be
// dispatched yet; the watch starts there all the same, and the events up
// to it, still on their way, are not delivered.
func (h *hub) watch(ctx context.Context, opts WatchOptions, published uint64) (*Watcher, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed != nil {
		return nil, h.closed
	}
	now := h.dispatched.Load()
	from := opts.Revision
	switch {
	case from == 0:
		from = now
	case from < h.compacted:
		return nil, ErrGone
	case from > max(now, published):
		return nil, ErrFutureRevision
	}
	w := &Watcher{
		hub:    h,
		opts:   opts,
		after:  from,
		notify: make(chan struct{}, 1),
		stop:   make(chan struct{}),
	}
	for i := 0; i < h.n; i++ {
		e := h.log[(h.start+i)%len(h.log)]
		if e.Revision > from && e.Kind == opts.Kind {
			w.offer(e)
		}
	}
	kw := h.byKind[opts.Kind]
	if kw == nil {
		kw = &kindWatchers{all: map[*Watcher]struct{}{}, indexed: map[string]map[string]map[*Watcher]struct{}{}}
		h.byKind[opts.Kind] = kw
	}
	if idx := opts.Filter.Index; idx != "" {
		byValue := kw.indexed[idx]
		if byValue == nil {
			byValue = map[string]map[*Watcher]struct{}{}
			kw.indexed[idx] = byValue
		}
		set := byValue[opts.Filter.Value]
		if set == nil {
			set = map[*Watcher]struct{}{}
			byValue[opts.Filter.Value] = set
		}
		set[w] = struct{}{}
	} else {
		kw.all[w] = struct{}{}
	}
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				w.Stop()
			case <-w.stop:
			}
		}()
	}
	return w, nil
}

func (h *hub) unregister(w *Watcher) {
	kw := h.byKind[w.opts.Kind]
	if kw == nil {
		return
	}
	if idx := w.opts.Filter.Index; idx != "" {
		byValue := kw.indexed[idx]
		set := byValue[w.opts.Filter.Value]
		delete(set, w)
		if len(set) == 0 {
			delete(byValue, w.opts.Filter.Value)
		}
		return
	}
	delete(kw.all, w)
}

// dispatch logs the events of committed batches and offers each to the
// watchers it may concern.
func (h *hub) dispatch(batches []*batch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range batches {
		for _, e := range b.events {
			h.append(e)
			kw := h.byKind[e.Kind]
			if kw == nil {
				continue
			}
			for w := range kw.all {
				h.offer(w, e)
			}
			for idx, byValue := range kw.indexed {
				vals := indexValues(e.Kind, idx, e.Object)
				if e.Old != nil {
					for _, v := range indexValues(e.Kind, idx, e.Old) {
						if !contains(vals, v) {
							vals = append(vals, v)
						}
					}
				}
				for _, v := range vals {
					for w := range byValue[v] {
						h.offer(w, e)
					}
				}
			}
		}
		h.dispatched.Store(b.rev)
	}
}

func (h *hub) offer(w *Watcher, e Event) {
	if !w.offer(e) {
		h.unregister(w)
	}
}

func (h *hub) close(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = err
	for _, kw := range h.byKind {
		for w := range kw.all {
			w.fail(err)
		}
		for _, byValue := range kw.indexed {
			for _, set := range byValue {
				for w := range set {
					w.fail(err)
				}
			}
		}
	}
	h.byKind = map[*api.Kind]*kindWatchers{}
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// keptQueue is the largest queue array a drained watcher keeps.
const keptQueue = 4096

// Watcher receives the events of one watch.
type Watcher struct {
	hub  *hub
	opts WatchOptions
	// after is the revision the watch starts after: events up to it are
	// not delivered (those of a commit published but not yet dispatched
	// when the watch began).
	after uint64

	mu sync.Mutex
	// queue[head:] are the events not yet delivered. The array is reused
	// while the watcher keeps up (see Next), so that a steady flow of
	// events costs no allocation.
	queue   []Event
	head    int
	err     error
	stopped bool
	notify  chan struct{}
	stop    chan struct{}
	once    sync.Once
}

// offer queues an event if it concerns the watcher. It returns false when
// the watcher is finished and should be unregistered.
func (w *Watcher) offer(e Event) bool {
	if e.Revision <= w.after {
		return true
	}
	e, ok := w.opts.Filter.Translate(e)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.stopped {
		return false
	}
	if !ok {
		return true
	}
	if len(w.queue)-w.head >= w.hub.queueLimit {
		w.err = ErrWatcherTooSlow
		w.signal()
		return false
	}
	if len(w.queue) == cap(w.queue) && w.head > 0 {
		// Move the undelivered events to the front rather than grow.
		n := copy(w.queue, w.queue[w.head:])
		clear(w.queue[n:])
		w.queue, w.head = w.queue[:n], 0
	}
	w.queue = append(w.queue, e)
	w.signal()
	return true
}

func (w *Watcher) signal() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *Watcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	w.signal()
}

// Next returns the next event. It blocks until one comes, ctx ends, the
// watcher is stopped, or the watch fails (ErrWatcherTooSlow, ErrClosed);
// queued events are delivered before the failure.
func (w *Watcher) Next(ctx context.Context) (Event, error) {
	for {
		w.mu.Lock()
		if w.head < len(w.queue) {
			e := w.queue[w.head]
			w.queue[w.head] = Event{}
			w.head++
			if w.head == len(w.queue) {
				// Drained: start again at the front, keeping a small
				// array and letting a burst's large one go.
				w.queue, w.head = w.queue[:0], 0
				if cap(w.queue) > keptQueue {
					w.queue = nil
				}
			}
			w.mu.Unlock()
			return e, nil
		}
		err, stopped := w.err, w.stopped
		w.mu.Unlock()
		if stopped {
			return Event{}, context.Canceled
		}
		if err != nil {
			return Event{}, err
		}
		select {
		case <-w.notify:
		case <-w.stop:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Bookmark returns the revision the watcher has caught up to, when it has
// no event waiting: every change up to that revision has been delivered.
func (w *Watcher) Bookmark() (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head < len(w.queue) || w.err != nil {
		return 0, false
	}
	return max(w.hub.dispatched.Load(), w.after), true
}

// Stop ends the watch; Next then returns context.Canceled.
func (w *Watcher) Stop() {
	w.once.Do(func() {
		w.mu.Lock()
		w.stopped = true
		w.queue, w.head = nil, 0
		w.mu.Unlock()
		close(w.stop)
		w.hub.mu.Lock()
		w.hub.unregister(w)
		w.hub.mu.Unlock()
	})
}

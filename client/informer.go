package client

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
)

// InformerOptions tune an Informer. The zero value is usable.
type InformerOptions struct {
	// Namespace limits the informer to one namespace; empty: all.
	Namespace string
	ListOptions
	// Clock times back-off; the real clock when nil.
	Clock clock.WithTicker
	// MinBackoff and MaxBackoff bound the wait before listing again after
	// a failure (defaults 500ms and 30s), doubled at each failure in a row;
	// a watch event, a watch that lived MaxBackoff, or a list that succeeds
	// after such a watch ends the row. A watch that ends sooner, with no
	// event, is a failure however it ends.
	MinBackoff, MaxBackoff time.Duration
	// WatchTimeout is asked of the server for each watch (default five to
	// ten minutes, chosen at random, so that many agents do not all watch
	// again at once).
	WatchTimeout time.Duration
	// Logger receives one line per failure; slog.Default() when nil.
	Logger *slog.Logger
}

// Informer keeps a cache of the objects of a kind that a selection
// matches, and calls a handler for every change: it lists, then watches
// from the list's revision; when the watch ends cleanly it watches again
// from the last revision seen; when that revision is gone (410), the
// server cannot reach it, or the stream breaks, it lists again (after a
// back-off for failures) and turns the difference with its cache into
// events, Deleted ones included for objects that vanished in between.
// It is the agent's and outside controllers' view of the API, in the
// manner of client-go's reflector and informer.
type Informer struct {
	c       *Client
	kind    *api.Kind
	opts    InformerOptions
	handler func(Event)
	log     *slog.Logger

	mu     sync.RWMutex
	items  map[string]api.Object
	rv     string
	synced chan struct{}
	once   sync.Once
}

// NewInformer makes an informer of kind k; handler (which may be nil) is
// called from Run's goroutine for every Added, Modified and Deleted
// object, after the cache has changed. Modified and Deleted events carry
// the cached state before the change in Old.
func NewInformer(c *Client, k *api.Kind, opts InformerOptions, handler func(Event)) *Informer {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(30*time.Second, opts.MinBackoff)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if handler == nil {
		handler = func(Event) {}
	}
	return &Informer{
		c: c.sendOnce(), kind: k, opts: opts, handler: handler, log: opts.Logger,
		items:  map[string]api.Object{},
		synced: make(chan struct{}),
	}
}

func key(o api.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// Get returns a cached object. Cached objects are shared: copy before
// changing.
func (i *Informer) Get(namespace, name string) (api.Object, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	o, ok := i.items[namespace+"/"+name]
	return o, ok
}

// List returns every cached object, in no order.
func (i *Informer) List() []api.Object {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]api.Object, 0, len(i.items))
	for _, o := range i.items {
		out = append(out, o)
	}
	return out
}

// ResourceVersion is the revision the cache is at.
func (i *Informer) ResourceVersion() string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.rv
}

// HasSynced reports whether the first list is in the cache.
func (i *Informer) HasSynced() bool {
	select {
	case <-i.synced:
		return true
	default:
		return false
	}
}

// WaitForSync waits for the first list, or for ctx to end.
func (i *Informer) WaitForSync(ctx context.Context) error {
	select {
	case <-i.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run keeps the cache until ctx ends, and returns ctx's error.
func (i *Informer) Run(ctx context.Context) error {
	backoff := i.opts.MinBackoff
	needList := true
	// sound is whether the last watch showed the server well: it delivered
	// an event, or it lived MaxBackoff. Only then does a list that succeeds
	// end the back-off, and only then is a watch that ends asked again at
	// once. A server or proxy that refuses watches, or opens them and ends
	// them at once (a broken stream, an ERROR event, a close), is otherwise
	// asked for a list and a watch at the shortest wait forever: twice a
	// second from every informer of every agent. A watch that lived
	// MaxBackoff keeps this informer to one list and watch per MaxBackoff
	// even if every watch after it fails at once: no more than the longest
	// back-off allows.
	sound := true
	for ctx.Err() == nil {
		listed := false
		if needList {
			if err := i.relist(ctx); err != nil {
				if ctx.Err() != nil {
					break
				}
				i.log.Warn("list failed; retrying", "resource", i.kind.Resource, "err", err, "in", backoff)
				if !i.sleep(ctx, &backoff) {
					break
				}
				continue
			}
			needList, listed = false, true
			if sound {
				// The server answers again: a watch that breaks next (it
				// restarted once more) waits the shortest time, not the
				// back-off of the failures before.
				backoff = i.opts.MinBackoff
			}
			i.once.Do(func() { close(i.synced) })
		}
		var err error
		sound, err = i.watch(ctx, &backoff)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, ErrWatchClosed) && sound:
			// The server's timeout: watch again from where we are.
		case (IsGone(err) || IsTooLargeResourceVersion(err)) && (sound || !listed):
			// The revision is gone or unreachable: list again at once.
			needList = true
		default:
			// A broken stream, a server that cannot be reached, or a watch
			// that ended at once, even from a list just made: list again
			// (or, after a clean end, watch again) after a back-off, so
			// nothing lost in between is missed.
			i.log.Warn("watch failed; retrying", "resource", i.kind.Resource, "err", err, "in", backoff)
			needList = !errors.Is(err, ErrWatchClosed)
			i.sleep(ctx, &backoff) // ends early when ctx does, and so does the loop
		}
	}
	return ctx.Err()
}

// sleep waits out the back-off on the informer's clock and doubles it; it
// reports false when ctx ended first.
func (i *Informer) sleep(ctx context.Context, backoff *time.Duration) bool {
	d := *backoff
	// Up to 20% jitter, so that many informers do not retry in step.
	d += time.Duration(rand.Int64N(int64(d)/5 + 1))
	*backoff = min(*backoff*2, i.opts.MaxBackoff)
	t := i.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// relist lists and reconciles the cache with the result.
func (i *Informer) relist(ctx context.Context) error {
	fresh := map[string]api.Object{}
	rv, err := i.c.ListEach(ctx, i.kind, i.opts.Namespace, i.opts.ListOptions, func(o api.Object) error {
		fresh[key(o)] = o
		return nil
	})
	if err != nil {
		return err
	}
	var events []Event
	i.mu.Lock()
	for k, o := range fresh {
		old, ok := i.items[k]
		switch {
		case !ok:
			events = append(events, Event{Type: Added, Object: o})
		case old.GetResourceVersion() != o.GetResourceVersion():
			events = append(events, Event{Type: Modified, Object: o, Old: old})
		}
	}
	for k, old := range i.items {
		if _, ok := fresh[k]; !ok {
			events = append(events, Event{Type: Deleted, Object: old, Old: old})
		}
	}
	i.items = fresh
	i.rv = rv
	i.mu.Unlock()
	for _, e := range events {
		i.handler(e)
	}
	return nil
}

// watch follows one watch from the cache's revision until it ends, and
// returns why it ended and whether it was sound: it delivered an event,
// or it lived MaxBackoff on the informer's clock. Either ends the back-off.
func (i *Informer) watch(ctx context.Context, backoff *time.Duration) (sound bool, err error) {
	timeout := i.opts.WatchTimeout
	if timeout <= 0 {
		timeout = 5*time.Minute + time.Duration(rand.Int64N(int64(5*time.Minute)))
	}
	w, err := i.c.Watch(ctx, i.kind, i.opts.Namespace, WatchOptions{
		ListOptions:     i.opts.ListOptions,
		ResourceVersion: i.ResourceVersion(),
		AllowBookmarks:  true,
		TimeoutSeconds:  int64(max(timeout/time.Second, 1)),
	})
	if err != nil {
		return false, err
	}
	defer w.Stop()
	opened := i.opts.Clock.Now()
	for {
		e, err := w.Next(ctx)
		if err != nil {
			if i.opts.Clock.Since(opened) >= i.opts.MaxBackoff {
				sound, *backoff = true, i.opts.MinBackoff
			}
			return sound, err
		}
		sound, *backoff = true, i.opts.MinBackoff
		i.apply(e)
	}
}

// apply puts one watch event in the cache and hands it on.
func (i *Informer) apply(e Event) {
	k := key(e.Object)
	i.mu.Lock()
	i.rv = e.ResourceVersion()
	if e.Type == Bookmark {
		i.mu.Unlock()
		return
	}
	old, had := i.items[k]
	if e.Type == Deleted {
		delete(i.items, k)
	} else {
		i.items[k] = e.Object
	}
	i.mu.Unlock()
	switch {
	case e.Type == Deleted && !had:
		return // never seen: nothing to tell
	case e.Type == Deleted:
		e.Old = old
	case had:
		e.Type, e.Old = Modified, old
	default:
		e.Type = Added
	}
	i.handler(e)
}

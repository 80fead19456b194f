package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// RelistDelay is how long an informer waits before listing again after a
// watch or a listing failed for a reason other than falling behind (its
// revision compacted, its queue overrun), so that a store in trouble is
// not hammered. A watch that fell behind is listed again at once.
const RelistDelay = time.Second

// Handler is one consumer's view of one kind. The informer calls it from
// its one goroutine per kind, in revision order, so a Handler must not
// block: it enqueues a key or updates a cache and returns.
type Handler struct {
	// List replaces what the consumer knows of the kind with what snap
	// holds. It is called when the handler is registered and again after
	// every lost watch, before any event newer than snap.
	List func(snap *store.Snapshot) error
	// Event receives each change after the listing.
	Event func(e store.Event)
	// Closed, if set, is called once when the store closes and the
	// informer ends with err; no event follows.
	Closed func(err error)
}

// Registration asks for one kind's changes for one Handler.
type Registration struct {
	Kind    *api.Kind
	Handler Handler
}

// Factory owns the informers of one store: one per kind, made when a
// consumer first registers for it.
type Factory struct {
	store *store.Store
	clock clock.WithTicker
	log   *slog.Logger

	// register is held by Register across the informers it locks, so that
	// two registrations never lock them in different orders.
	register sync.Mutex

	mu        sync.Mutex
	informers map[*api.Kind]*informer
	ctx       context.Context // set by Start
	wg        sync.WaitGroup
}

// NewFactory returns a Factory over s. A nil clock is the real one, a nil
// logger slog.Default().
func NewFactory(s *store.Store, clk clock.WithTicker, log *slog.Logger) *Factory {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Factory{store: s, clock: clk, log: log, informers: map[*api.Kind]*informer{}}
}

// Start runs the informers, those registered for already and those to
// come, until ctx ends; Wait waits for them. A Factory starts once.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx != nil {
		return
	}
	f.ctx = ctx
	for _, inf := range f.informers {
		f.startLocked(inf)
	}
}

// Wait blocks until every informer Start ran has ended.
func (f *Factory) Wait() { f.wg.Wait() }

func (f *Factory) startLocked(inf *informer) {
	ctx := f.ctx
	f.wg.Go(func() { inf.run(ctx) })
}

// informerFor returns the kind's informer, making (and, once started,
// running) it on first use.
func (f *Factory) informerFor(k *api.Kind) *informer {
	f.mu.Lock()
	defer f.mu.Unlock()
	inf := f.informers[k]
	if inf == nil {
		inf = &informer{factory: f, kind: k}
		f.informers[k] = inf
		if f.ctx != nil {
			f.startLocked(inf)
		}
	}
	return inf
}

// Register lists each registration's kind from one snapshot, in the order
// given, then delivers every later change of it: a consumer of several
// kinds (owners and their dependents) starts them all at one revision.
// remove ends the deliveries; the informers go on for the others. If a
// listing fails, nothing is registered. A Handler must not call Register
// or remove: the informer holds its lock while it delivers.
func (f *Factory) Register(regs ...Registration) (remove func(), err error) {
	f.register.Lock()
	defer f.register.Unlock()
	infs := make([]*informer, len(regs))
	var locked []*informer
	for i, r := range regs {
		infs[i] = f.informerFor(r.Kind)
		if !containsInformer(locked, infs[i]) {
			infs[i].mu.Lock()
			locked = append(locked, infs[i])
		}
	}
	unlock := func() {
		for _, inf := range locked {
			inf.mu.Unlock()
		}
	}
	snap := f.store.Snapshot()
	for _, r := range regs {
		if err := r.Handler.List(snap); err != nil {
			unlock()
			return nil, fmt.Errorf("list %s: %w", r.Kind.Resource, err)
		}
	}
	added := make([]*entry, len(regs))
	type closedEntry struct {
		e   *entry
		err error
	}
	var closed []closedEntry
	for i, r := range regs {
		inf := infs[i]
		e := &entry{Handler: r.Handler, from: snap.Revision()}
		added[i] = e
		if inf.closed != nil {
			closed = append(closed, closedEntry{e, inf.closed})
			continue
		}
		if len(inf.handlers) == 0 && !inf.watching {
			// The informer's watch begins no later than its first
			// consumer's listing.
			inf.rev = snap.Revision()
		}
		inf.handlers = append(inf.handlers, e)
	}
	unlock()
	for _, c := range closed {
		if c.e.Closed != nil {
			c.e.Closed(c.err)
		}
	}
	return func() {
		for i, e := range added {
			infs[i].remove(e)
		}
	}, nil
}

func containsInformer(infs []*informer, inf *informer) bool {
	for _, x := range infs {
		if x == inf {
			return true
		}
	}
	return false
}

// entry is one registered Handler; from is the revision it was listed at,
// so that it is not given the events its listing already holds.
type entry struct {
	Handler
	from uint64
}

// informer is the one list and watch of one kind.
type informer struct {
	factory *Factory
	kind    *api.Kind

	// mu is held while an event or a listing is delivered, and by
	// Register while it lists, so a consumer sees its listing and then
	// exactly the changes after it.
	mu       sync.Mutex
	handlers []*entry
	// rev is the revision the next watch starts after.
	rev      uint64
	watching bool
	closed   error
}

func (inf *informer) remove(e *entry) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	for i, x := range inf.handlers {
		if x == e {
			inf.handlers = append(inf.handlers[:i:i], inf.handlers[i+1:]...)
			return
		}
	}
}

// run watches until ctx ends or the store closes. A lost watch is listed
// again for every consumer, at once when it fell behind, after
// RelistDelay on the factory's clock for any other failure.
func (inf *informer) run(ctx context.Context) {
	f := inf.factory
	inf.mu.Lock()
	if !inf.watching && len(inf.handlers) == 0 {
		inf.rev = f.store.Snapshot().Revision()
	}
	inf.watching = true
	rev := inf.rev
	inf.mu.Unlock()
	for {
		err := inf.watch(ctx, rev)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, store.ErrClosed) {
			inf.close(fmt.Errorf("watch %s: %w", inf.kind.Resource, err))
			return
		}
		for {
			if !errors.Is(err, store.ErrGone) && !errors.Is(err, store.ErrWatcherTooSlow) {
				f.log.Error("watch failed, listing again", "kind", inf.kind.Resource, "err", err)
				select {
				case <-ctx.Done():
					return
				case <-f.clock.After(RelistDelay):
				}
			}
			if rev, err = inf.relist(); err == nil {
				break
			}
		}
	}
}

func (inf *informer) watch(ctx context.Context, rev uint64) error {
	w, err := inf.factory.store.Watch(ctx, store.WatchOptions{Kind: inf.kind, Revision: rev})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		e, err := w.Next(ctx)
		if err != nil {
			return err
		}
		inf.mu.Lock()
		for _, h := range inf.handlers {
			if e.Revision > h.from {
				h.Event(e)
			}
		}
		inf.mu.Unlock()
	}
}

// relist gives every consumer a fresh listing and returns its revision.
func (inf *informer) relist() (uint64, error) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	snap := inf.factory.store.Snapshot()
	for _, h := range inf.handlers {
		if err := h.List(snap); err != nil {
			return 0, fmt.Errorf("list %s: %w", inf.kind.Resource, err)
		}
		h.from = snap.Revision()
	}
	inf.rev = snap.Revision()
	return inf.rev, nil
}

func (inf *informer) close(err error) {
	inf.mu.Lock()
	inf.closed = err
	hs := inf.handlers
	inf.handlers = nil
	inf.mu.Unlock()
	for _, h := range hs {
		if h.Closed != nil {
			h.Closed(err)
		}
	}
}

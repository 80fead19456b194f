package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Watch feeds a Controller from the store: one kind, an optional filter,
// and a mapping from a change to the keys it concerns.
type Watch struct {
	Kind   *api.Kind
	Filter store.Filter
	// Keys returns the keys a change concerns. Nil means the changed
	// object's own key; a controller that reconciles owners returns the
	// owner's key for a change to a dependent.
	Keys func(e store.Event) []string
}

// ObjectKey is the key of an object: "namespace/name", or "name".
func ObjectKey(obj api.Object) string { return Key(obj.GetNamespace(), obj.GetName()) }

func (w *Watch) keys(e store.Event) []string {
	if w.Keys != nil {
		return w.Keys(e)
	}
	return []string{ObjectKey(e.Object)}
}

// relistDelay is how long follow waits before listing again after a failed
// watch, so that a store in trouble is not hammered.
const relistDelay = time.Second

// follow lists every object the watch selects, enqueues their keys, then
// enqueues the keys of every later change. When the watch is lost (its
// revision was compacted, or the watcher fell behind) it lists again, so
// no change is missed: reconcilers are level-triggered and a key enqueued
// twice costs one reconcile.
//
// The first listing reads the snapshot Run took for every watch of the
// controller, so that watches of different kinds start at one revision: a
// change between the starts of two of them (an owner deleted after its
// dependent was listed) is never missed.
func (c *Controller) follow(ctx context.Context, s *store.Store, w Watch, first *store.Snapshot) {
	snap := first
	for ctx.Err() == nil {
		if snap == nil {
			snap = s.Snapshot()
		}
		err := c.listAndWatch(ctx, s, snap, w)
		snap = nil
		if ctx.Err() != nil {
			return
		}
		if !errors.Is(err, store.ErrGone) && !errors.Is(err, store.ErrWatcherTooSlow) {
			c.log.Error("watch failed, listing again", "kind", w.Kind.GVK.Kind, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(relistDelay):
		}
	}
}

func (c *Controller) listAndWatch(ctx context.Context, s *store.Store, snap *store.Snapshot, w Watch) error {
	err := snap.Each(w.Kind, w.Filter, func(obj api.Object) bool {
		for _, key := range w.keys(store.Event{Type: store.Added, Revision: snap.Revision(), Kind: w.Kind, Object: obj}) {
			c.queue.Add(key)
		}
		return true
	})
	if err != nil {
		return err
	}
	watcher, err := s.Watch(ctx, store.WatchOptions{Kind: w.Kind, Filter: w.Filter, Revision: snap.Revision()})
	if err != nil {
		return err
	}
	defer watcher.Stop()
	for {
		e, err := watcher.Next(ctx)
		if err != nil {
			return err
		}
		for _, key := range w.keys(e) {
			c.queue.Add(key)
		}
	}
}

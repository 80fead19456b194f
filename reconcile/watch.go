package reconcile

import (
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
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

// registrations turns the controller's watches into informer handlers:
// a listing enqueues the keys of every object the watch selects, a change
// the keys it concerns, seen through the watch's filter. A relist after a
// lost watch enqueues everything again, so no change is missed:
// reconcilers are level-triggered and a key enqueued twice costs one
// reconcile. Run registers them together, so that watches of different
// kinds start at one revision: a change between the starts of two of them
// (an owner deleted after its dependent was listed) is never missed.
func (c *Controller) registrations() []informer.Registration {
	regs := make([]informer.Registration, len(c.watches))
	for i := range c.watches {
		w := &c.watches[i]
		regs[i] = informer.Registration{Kind: w.Kind, Handler: informer.Handler{
			List: func(snap *store.Snapshot) error {
				return snap.Each(w.Kind, w.Filter, func(obj api.Object) bool {
					for _, key := range w.keys(store.Event{Type: store.Added, Revision: snap.Revision(), Kind: w.Kind, Object: obj}) {
						c.queue.Add(key)
					}
					return true
				})
			},
			Event: func(e store.Event) {
				e, ok := w.Filter.Translate(e)
				if !ok {
					return
				}
				for _, key := range w.keys(e) {
					c.queue.Add(key)
				}
			},
		}}
	}
	return regs
}

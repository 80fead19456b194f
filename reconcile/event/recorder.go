package event

import (
	"fmt"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Recorder records events from one component. Its methods are safe for
// concurrent use, and a nil *Recorder records nothing, so a component
// built without one need not check.
type Recorder struct {
	w      *Writer
	source api.EventSource
}

// Event queues an event about obj and returns at once: it never waits for
// the store. When the queue is full the event is dropped and counted in
// berth_events_dropped_total.
func (r *Recorder) Event(obj api.Object, eventType, reason, message string) {
	if r == nil {
		return
	}
	if e, ok := r.entry(obj, eventType, reason, message); ok {
		r.w.enqueue(e)
	}
}

// Eventf is Event with a formatted message.
func (r *Recorder) Eventf(obj api.Object, eventType, reason, format string, args ...any) {
	if r == nil {
		return
	}
	r.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

// Record writes an event about obj inside tx, for a writer whose event
// must commit (or not) with the change it reports, such as the applier's
// drift corrections. Correlation and the rate limit apply as for Event.
// An event refused because its namespace is being deleted is dropped, as
// Run drops it: the change it reports still commits.
func (r *Recorder) Record(tx *store.Txn, obj api.Object, eventType, reason, message string) error {
	if r == nil {
		return nil
	}
	e, ok := r.entry(obj, eventType, reason, message)
	if !ok {
		return fmt.Errorf("record event %s: %T is not a registered kind", reason, obj)
	}
	if err := r.w.record(tx, e); err != nil && !store.IsNamespaceTerminating(err) {
		return err
	}
	return nil
}

// entry stamps an event with the time it happened and a reference to obj.
func (r *Recorder) entry(obj api.Object, eventType, reason, message string) (entry, bool) {
	k := api.KindOf(obj)
	if k == nil {
		return entry{}, false
	}
	return entry{
		source: r.source,
		object: api.ObjectReference{
			Kind:       k.GVK.Kind,
			APIVersion: k.APIVersion(),
			Namespace:  obj.GetNamespace(),
			Name:       obj.GetName(),
			UID:        string(obj.GetUID()),
		},
		eventType: eventType,
		reason:    reason,
		message:   message,
		at:        r.w.opts.Clock.Now(),
	}, true
}

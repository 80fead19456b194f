package reconcile

import "github.com/berth-dev/berth/api"

// EventRecorder records an event about an object (SuccessfulCreate,
// FailedBinding, …) without blocking the caller; reconcile/event's
// Recorder is one.
type EventRecorder interface {
	Event(obj api.Object, eventType, reason, message string)
}

// NoEvents records nothing: the EventRecorder of a controller given none.
type NoEvents struct{}

// Event drops the event.
func (NoEvents) Event(api.Object, string, string, string) {}

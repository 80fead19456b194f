package sched

import "github.com/berth-dev/berth/api"

// Event types and the reasons the scheduler reports, as kube-scheduler
// spells them.
const (
	EventTypeNormal       = "Normal"
	EventTypeWarning      = "Warning"
	EventScheduled        = "Scheduled"
	EventFailedScheduling = "FailedScheduling"
)

// EventRecorder is the hook through which the scheduler reports what it
// did to a pod (Scheduled, FailedScheduling); the events work fills it
// with one that writes Event objects. It must not block: it is called from
// the scheduling loop and the binder.
type EventRecorder interface {
	Event(obj api.Object, eventType, reason, message string)
}

// noEvents is the recorder until there is one.
type noEvents struct{}

func (noEvents) Event(api.Object, string, string, string) {}

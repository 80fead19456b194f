package apply

import (
	"fmt"
	"strings"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Event reasons the applier records on the objects it touches.
const (
	// ReasonDriftCorrected: a change made outside the source was reverted.
	ReasonDriftCorrected = "DriftCorrected"
	// ReasonAdopted: an object with no source annotation was taken over.
	ReasonAdopted = "Adopted"
)

// EventComponent is the component events name as their source.
const EventComponent = "berth-applier"

var eventKind = api.KindOf(&api.Event{})

// recordEvent writes a Normal event about obj in the transaction that
// changed it, so the event and the change are seen together; a repeat
// (the same drift reverted again) bumps the count of the one before.
func (a *Applier) recordEvent(tx *store.Txn, obj api.Object, reason, message string) error {
	return a.events.Record(tx, obj, api.EventTypeNormal, reason, message)
}

// driftMessage names the object, the source and the fields reverted.
func driftMessage(source string, key Key, fields []string) string {
	msg := fmt.Sprintf("Source %s reverted a change made outside it to %s", source, key)
	if len(fields) > 0 {
		msg += ": " + strings.Join(fields, ", ")
	}
	return msg
}

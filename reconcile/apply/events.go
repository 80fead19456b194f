package apply

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Event reasons the applier records on the objects it touches.
const (
	// ReasonDriftCorrected: a change made outside the source was reverted.
	ReasonDriftCorrected = "DriftCorrected"
	// ReasonAdopted: an object with no source annotation, or claimed by a
	// source that no longer exists, was taken over.
	ReasonAdopted = "Adopted"
	// ReasonReleased: an object the source no longer declares, annotated
	// berth.dev/prune: disabled, was left in place and let go.
	ReasonReleased = "Released"
)

// Event reasons the applier records on a Source about its syncs, named as
// Flux's controllers name theirs.
const (
	// ReasonReconciliationSucceeded: a revision was applied.
	ReasonReconciliationSucceeded = "ReconciliationSucceeded"
	// ReasonValidationFailed: a revision was rejected for its errors.
	ReasonValidationFailed = "ValidationFailed"
	// ReasonApplyFailed: the store refused a revision (a quota).
	ReasonApplyFailed = "ApplyFailed"
	// ReasonFetchFailed: the source could not be read.
	ReasonFetchFailed = "FetchFailed"
	// ReasonPruneGuard: a revision was held back by the prune guard.
	ReasonPruneGuard = "PruneGuard"
)

// eventReasons maps the Ready reason of a sync to the reason of its event.
var eventReasons = map[string]string{
	api.ReasonSucceeded:       ReasonReconciliationSucceeded,
	api.ReasonInvalidRevision: ReasonValidationFailed,
	api.ReasonForbidden:       ReasonApplyFailed,
	api.ReasonFetchFailed:     ReasonFetchFailed,
	api.ReasonPruneGuard:      ReasonPruneGuard,
}

// maxEventErrors is how many of a rejected revision's errors its event
// names; the Ready condition lists every one.
const maxEventErrors = 3

// SyncEvent is syncEvent, for those who tell of a sync elsewhere (the
// notifications): whether the outcome res of a sync of old is news.
func SyncEvent(old *api.Source, res *Result) (eventType, reason, message string, ok bool) {
	return syncEvent(old, res)
}

// syncEvent is the event a sync's outcome (res) earns on its Source, as
// the Source was before the sync (old): a revision applied that was not
// applied and Ready before, or a failure that is not the one the Ready
// condition already tells. A sync that ends as the one before did earns
// none, so a source polled while broken, or a trigger that applies the
// same revision again, records nothing more.
func syncEvent(old *api.Source, res *Result) (eventType, reason, message string, ok bool) {
	c := meta.FindStatusCondition(old.Status.Conditions, api.SourceReady)
	if res.Ready {
		if c != nil && c.Status == metav1.ConditionTrue && old.Status.LastAppliedRevision == res.Revision {
			return "", "", "", false
		}
		return api.EventTypeNormal, ReasonReconciliationSucceeded, res.Message, true
	}
	if c != nil && c.Status == metav1.ConditionFalse && c.Reason == res.Reason && c.Message == res.Message {
		return "", "", "", false
	}
	reason, ok = eventReasons[res.Reason]
	if !ok {
		reason = res.Reason
	}
	return api.EventTypeWarning, reason, oneLine(res.Message), true
}

// oneLine turns a Ready message into an event's: its first line, then
// the first maxEventErrors of the errors listed on the lines after it,
// joined on one line, as events are shown one a line.
func oneLine(msg string) string {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	if len(lines) == 1 {
		return msg
	}
	head, errs := lines[0], lines[1:]
	more := 0
	if _, err := fmt.Sscanf(errs[len(errs)-1], moreErrors, &more); err == nil {
		errs = errs[:len(errs)-1]
	}
	out := head + " " + strings.Join(errs[:min(len(errs), maxEventErrors)], "; ")
	if len(errs)+more > maxEventErrors {
		out += fmt.Sprintf("; and %d more (the Ready condition lists them)", len(errs)+more-maxEventErrors)
	}
	return out
}

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

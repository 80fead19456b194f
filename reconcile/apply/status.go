package apply

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// writeStatus records a sync that wrote nothing in its own transaction,
// and logs why: as a warning the first time, at debug while retries fail
// the same way (same revision, reason and message), as Flux's controllers
// report a failed reconcile once. st is the source's state, locked.
func (a *Applier) writeStatus(ctx context.Context, name string, st *sourceState, res *Result, opts ApplyOptions) error {
	_, err := a.store.Txn(ctx, func(tx *store.Txn) error {
		src, err := getSource(tx, name)
		if err != nil {
			return err
		}
		return a.updateStatus(tx, src, res, opts, -1)
	})
	if err != nil {
		return fmt.Errorf("write status of source %s: %w", name, err)
	}
	level := slog.LevelWarn
	if failure := res.Revision + "\x00" + res.Reason + "\x00" + res.Message; failure != st.failure {
		st.failure = failure
	} else {
		level = slog.LevelDebug
	}
	a.log.Log(ctx, level, "revision not applied", "source", name, "revision", res.Revision, "reason", res.Reason, "err", res.Message)
	return nil
}

// updateStatus writes the outcome of a sync to the Source's status:
// always the attempted revision, the sync time, the Ready condition and
// the handled reconcile request; on success also the applied revision
// and the object count (objects >= 0). An outcome that differs from the
// last one is also an event on the Source, in the same transaction.
func (a *Applier) updateStatus(tx *store.Txn, src *api.Source, res *Result, opts ApplyOptions, objects int) error {
	eventType, reason, message, record := syncEvent(src, res)
	now := metav1.NewTime(a.clock.Now())
	s := src.DeepCopy()
	if res.Revision != "" {
		s.Status.LastAttemptedRevision = res.Revision
	}
	if objects >= 0 {
		// A revision read again (the source knew it was had) comes
		// without its commit: the one recorded still describes it.
		if res.Commit != nil || s.Status.LastAppliedRevision != res.Revision {
			s.Status.LastAppliedCommit = res.Commit
		}
		s.Status.LastAppliedRevision = res.Revision
		s.Status.Objects = int32(objects)
	}
	s.Status.LastSyncTime = &now
	if !res.started.IsZero() {
		s.Status.LastSyncDuration = &metav1.Duration{Duration: now.Sub(res.started)}
	}
	s.Status.History = remember(s.Status.History, api.SourceSync{Revision: res.Revision, Time: now,
		Duration: s.Status.LastSyncDuration, Reason: res.Reason, Message: res.Message})
	s.Status.ObservedGeneration = s.Generation
	if opts.Request != "" {
		s.Status.LastHandledReconcileAt = opts.Request
	}
	status := metav1.ConditionFalse
	condReason, condMessage := res.Reason, res.Message
	switch {
	case res.Ready && opts.Wait:
		status, condReason = metav1.ConditionUnknown, api.ReasonProgressing
		condMessage += "; waiting for its objects to become healthy"
		s.Status.Health = api.SourceProgressing
	case res.Ready:
		status = metav1.ConditionTrue
		s.Status.Health, s.Status.Unhealthy = "", nil
	}
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{
		Type:               api.SourceReady,
		Status:             status,
		Reason:             condReason,
		Message:            condMessage,
		ObservedGeneration: s.Generation,
		LastTransitionTime: now,
	})
	if _, err := tx.Update(s); err != nil {
		return err
	}
	if !record {
		return nil
	}
	return a.events.Record(tx, s, eventType, reason, message)
}

// remember puts a sync at the head of a Source's history: the same
// outcome again (a poll of an unchanged revision re-applied) only
// updates its time, and the list keeps api.MaxSourceHistory entries.
func remember(history []api.SourceSync, sync api.SourceSync) []api.SourceSync {
	if len(history) > 0 && history[0].Revision == sync.Revision && history[0].Reason == sync.Reason && history[0].Message == sync.Message {
		out := slices.Clone(history)
		out[0] = sync
		return out
	}
	out := make([]api.SourceSync, 0, min(len(history)+1, api.MaxSourceHistory))
	out = append(out, sync)
	out = append(out, history[:min(len(history), api.MaxSourceHistory-1)]...)
	return out
}

// SetReady writes the Ready condition of a Source that did not sync
// (suspended, held back by its dependencies, not configured), in the
// status the syncs write, with an event when it changed.
func (a *Applier) SetReady(ctx context.Context, name string, status metav1.ConditionStatus, reason, message string) error {
	return a.SetOutcome(ctx, name, Outcome{Status: status, Reason: reason, Message: message})
}

// Outcome is what a step of a sync other than the apply found: a health
// check, a rollback, a reason not to sync.
type Outcome struct {
	Status          metav1.ConditionStatus
	Reason, Message string
	// Health, when set, is the new status.health, with the objects not
	// healthy (status.unhealthy).
	Health    string
	Unhealthy []string
	// HealthyRevision, when set, is the new status.lastHealthyRevision.
	HealthyRevision string
	// Revision, when set, ends a sync of that revision: it goes into
	// status.history.
	Revision string
}

// SetOutcome writes an Outcome to a Source's status: its Ready condition
// (an event when it changed) and what else it sets.
func (a *Applier) SetOutcome(ctx context.Context, name string, o Outcome) error {
	_, err := a.store.Txn(ctx, func(tx *store.Txn) error {
		src, err := getSource(tx, name)
		if err != nil {
			return err
		}
		s := src.DeepCopy()
		now := metav1.NewTime(a.clock.Now())
		s.Status.ObservedGeneration = s.Generation
		changed := meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{
			Type: api.SourceReady, Status: o.Status, Reason: o.Reason, Message: o.Message,
			ObservedGeneration: s.Generation, LastTransitionTime: now,
		})
		if o.Health != "" {
			s.Status.Health, s.Status.Unhealthy = o.Health, o.Unhealthy
		}
		if o.HealthyRevision != "" {
			s.Status.LastHealthyRevision = o.HealthyRevision
		}
		if o.Revision != "" {
			s.Status.History = remember(s.Status.History, api.SourceSync{Revision: o.Revision, Time: now, Reason: o.Reason, Message: o.Message})
		}
		if equality.Semantic.DeepEqual(s.Status, src.Status) {
			return nil
		}
		if _, err := tx.Update(s); err != nil {
			return err
		}
		if !changed {
			return nil
		}
		eventType := api.EventTypeWarning
		if o.Status != metav1.ConditionFalse {
			eventType = api.EventTypeNormal
		}
		return a.events.Record(tx, s, eventType, o.Reason, oneLine(o.Message))
	})
	if err != nil {
		return fmt.Errorf("write status of source %s: %w", name, err)
	}
	return nil
}

// SetHelmHistory changes status.helm, the history of a Source's Helm
// release, in its own transaction; nothing is written when change keeps
// it.
func (a *Applier) SetHelmHistory(ctx context.Context, name string, change func([]api.SourceHelmRelease) []api.SourceHelmRelease) error {
	_, err := a.store.Txn(ctx, func(tx *store.Txn) error {
		src, err := getSource(tx, name)
		if err != nil {
			return err
		}
		next := change(src.Status.Helm)
		if equality.Semantic.DeepEqual(next, src.Status.Helm) {
			return nil
		}
		s := src.DeepCopy()
		s.Status.Helm = next
		_, err = tx.Update(s)
		return err
	})
	if err != nil {
		return fmt.Errorf("write status of source %s: %w", name, err)
	}
	return nil
}

// Forget drops what the applier keeps of a source that was deleted.
func (a *Applier) Forget(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sources, name)
}

// appliedMessage is the Ready message of a revision applied.
func appliedMessage(rev string, c Counts) string {
	msg := fmt.Sprintf("Applied revision %s: %d created, %d updated, %d pruned, %d unchanged", rev, c.Created, c.Updated, c.Pruned, c.Unchanged)
	if c.Kept > 0 {
		msg += fmt.Sprintf(", %d kept (%s: %s)", c.Kept, api.AnnotationPrune, api.PruneDisabled)
	}
	return msg
}

// Bounds of a Ready message, so that a revision with a million errors, or
// one error quoting a whole file, still makes a Source (and a log line) of
// a few kilobytes, under the 32 KiB Kubernetes allows a condition's
// message: the first maxStatusErrors errors, each cut at maxErrorLen bytes.
const (
	maxStatusErrors = 50
	maxErrorLen     = 512
	// maxFetchErrorLen bounds the error of a source that cannot be read.
	maxFetchErrorLen = 4096
)

// moreErrors is the last line of a Ready message that lists only the
// first maxStatusErrors errors.
const moreErrors = "… and %d more errors"

// rejectedMessage is the Ready message of a revision with errors: the
// first maxStatusErrors errors, one per line, each with its file, document
// and field, and how many more there are.
func rejectedMessage(rev, applied string, errs api.ErrorList) string {
	var b strings.Builder
	n := "1 error"
	if len(errs) != 1 {
		n = fmt.Sprintf("%d errors", len(errs))
	}
	fmt.Fprintf(&b, "Revision %s rejected, nothing applied (still at revision %s): %s:", orNone(rev), orNone(applied), n)
	for _, e := range errs[:min(len(errs), maxStatusErrors)] {
		b.WriteString("\n")
		b.WriteString(truncate(strings.ReplaceAll(e.Error(), "\n", " "), maxErrorLen))
	}
	if len(errs) > maxStatusErrors {
		b.WriteString("\n")
		fmt.Fprintf(&b, moreErrors, len(errs)-maxStatusErrors)
	}
	return b.String()
}

// truncate cuts s to at most n bytes, on a rune boundary, and says so.
func truncate(s string, n int) string {
	const cut = " …(truncated)"
	if len(s) <= n {
		return s
	}
	end := n - len(cut)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + cut
}

// guardMessage is the Ready message of a revision held back by the prune
// guard: what it would prune and how to let it.
func guardMessage(name, rev, applied string, p *Plan) string {
	var pruned []string
	for _, s := range p.Steps {
		if s.Action == ActionPrune {
			pruned = append(pruned, s.Key.String())
		}
	}
	const shown = 10
	list := strings.Join(pruned[:min(len(pruned), shown)], ", ")
	if len(pruned) > shown {
		list += fmt.Sprintf(", and %d more", len(pruned)-shown)
	}
	return fmt.Sprintf("Revision %s would prune %d of the %d objects of source %s (%s); held back, still at revision %s. "+
		"Run `berth reconcile source %s --allow-prune` to apply it once, or set spec.allowMassPrune",
		orNone(rev), p.Counts.Pruned, p.Owned, name, list, orNone(applied), name)
}

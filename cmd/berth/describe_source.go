package main

import (
	"strings"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describeSource shows where a source reads from, what it last applied
// and attempted, and its conditions with their messages in full: a
// rejected revision's Ready message lists every error with its file,
// document and field, and a user fixing manifests needs all of them.
func describeSource(w *describeWriter, obj api.Object, _ *describeContext) {
	s := obj.(*api.Source)
	describeMeta(w, s, false)
	w.write(level0, "Type:\t%s\n", s.Spec.Type)
	w.write(level0, "URL:\t%s\n", s.Spec.URL)
	if s.Spec.Ref != "" {
		w.write(level0, "Ref:\t%s\n", s.Spec.Ref)
	}
	if s.Spec.Path != "" {
		w.write(level0, "Path:\t%s\n", s.Spec.Path)
	}
	if s.Spec.Interval != nil {
		w.write(level0, "Interval:\t%s\n", s.Spec.Interval.Duration)
	}
	if s.Spec.AllowMassPrune {
		w.write(level0, "Allow Mass Prune:\ttrue\n")
	}
	if s.Spec.Suspend {
		w.write(level0, "Suspended:\ttrue\n")
	}
	if len(s.Spec.DependsOn) > 0 {
		w.write(level0, "Depends On:\t%s\n", strings.Join(s.Spec.DependsOn, ", "))
	}
	if s.Spec.Wait {
		timeout := api.DefaultSourceTimeout
		if s.Spec.Timeout != nil {
			timeout = s.Spec.Timeout.Duration
		}
		w.write(level0, "Wait:\ttrue (timeout %s, rollback on failure %t)\n", timeout, s.Spec.RollbackOnFailure)
	}
	if r := s.Spec.SecretRef; r != nil {
		w.write(level0, "Secret:\t%s/%s\n", orNone(r.Namespace), r.Name)
	}
	if len(s.Spec.Options) > 0 {
		// Only the keys: values may be credentials.
		w.write(level0, "Options:\t%s\n", strings.Join(sortedKeys(s.Spec.Options), ", "))
	}
	w.write(level0, "Last Applied Revision:\t%s\n", orNone(s.Status.LastAppliedRevision))
	if c := s.Status.LastAppliedCommit; c != nil {
		w.write(level0, "Commit Message:\t%s\n", orNone(c.Message))
		w.write(level0, "Commit Author:\t%s\n", orNone(c.Author))
		if !c.Time.IsZero() {
			w.write(level0, "Commit Time:\t%s\n", formatTime(c.Time))
		}
	}
	w.write(level0, "Last Attempted Revision:\t%s\n", orNone(s.Status.LastAttemptedRevision))
	if s.Status.LastSyncTime != nil {
		w.write(level0, "Last Sync Time:\t%s\n", formatTime(*s.Status.LastSyncTime))
	} else {
		w.write(level0, "Last Sync Time:\t%s\n", table.None)
	}
	if d := s.Status.LastSyncDuration; d != nil {
		w.write(level0, "Last Sync Duration:\t%s\n", d.Duration)
	}
	w.write(level0, "Objects:\t%d\n", s.Status.Objects)
	if s.Status.Health != "" {
		w.write(level0, "Health:\t%s\n", s.Status.Health)
		for _, u := range s.Status.Unhealthy {
			w.write(level1, "%s\n", u)
		}
	}
	if s.Status.LastHealthyRevision != "" {
		w.write(level0, "Last Healthy Revision:\t%s\n", s.Status.LastHealthyRevision)
	}
	describeSourceHistory(w, s.Status.History)
	describeHelmHistory(w, s.Status.Helm)
	if len(s.Status.Conditions) == 0 {
		w.write(level0, "Conditions:\t%s\n", table.None)
		return
	}
	w.write(level0, "Conditions:\n")
	w.write(level1, "Type\tStatus\tReason\tLastTransitionTime\n")
	w.write(level1, "----\t------\t------\t------------------\n")
	for _, c := range s.Status.Conditions {
		w.write(level1, "%s \t%s \t%s \t%s\n", c.Type, c.Status, c.Reason, formatTime(c.LastTransitionTime))
	}
	for _, c := range s.Status.Conditions {
		msg := strings.TrimRight(c.Message, "\n")
		if msg == "" {
			continue
		}
		w.write(level0, "%s Message:\n", c.Type)
		for _, line := range strings.Split(msg, "\n") {
			w.write(level1, "%s\n", line)
		}
	}
}

// describeHelmHistory lists the revisions of a Source's Helm release,
// newest first, in `helm history`'s columns.
func describeHelmHistory(w *describeWriter, history []api.SourceHelmRelease) {
	if len(history) == 0 {
		return
	}
	w.write(level0, "Helm Release:\n")
	w.write(level1, "Revision\tUpdated\tStatus\tChart\tApp Version\tDescription\n")
	w.write(level1, "--------\t-------\t------\t-----\t-----------\t-----------\n")
	for _, h := range history {
		w.write(level1, "%d\t%s\t%s\t%s\t%s\t%s\n", h.Revision, formatTime(h.Updated), h.Status, h.Chart, orNone(h.AppVersion), h.Description)
	}
}

// describeSourceHistory lists the last syncs, newest first, each with its
// whole message: what happened to each revision.
func describeSourceHistory(w *describeWriter, history []api.SourceSync) {
	if len(history) == 0 {
		return
	}
	w.write(level0, "History:\n")
	w.write(level1, "Time\tRevision\tReason\tDuration\n")
	w.write(level1, "----\t--------\t------\t--------\n")
	for _, h := range history {
		d := table.None
		if h.Duration != nil {
			d = h.Duration.Duration.String()
		}
		w.write(level1, "%s \t%s \t%s \t%s\n", formatTime(h.Time), table.ShortRevision(orNone(h.Revision)), h.Reason, d)
		for _, line := range strings.Split(strings.TrimRight(h.Message, "\n"), "\n") {
			if line != "" {
				w.write(level2, "%s\n", line)
			}
		}
	}
}

package workload

import (
	"slices"
	"time"

	"github.com/berth-dev/berth/api"
)

// phaseRank orders phases for scale-down: a pod further from running goes
// first.
var phaseRank = map[api.PodPhase]int{api.PodPending: 0, api.PodUnknown: 1, api.PodRunning: 2}

// deleteFirst reports whether pod a should be deleted before pod b when
// scaling down (SPEC §7), the order of Kubernetes' ActivePods: unscheduled
// before scheduled; Pending before Unknown before Running; not ready before
// ready; ready for less time before ready for longer; more restarts before
// fewer; created more recently before created earlier.
func deleteFirst(a, b *api.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if ra, rb := phaseRank[a.Status.Phase], phaseRank[b.Status.Phase]; ra != rb {
		return ra < rb
	}
	if a.Ready() != b.Ready() {
		return !a.Ready()
	}
	if a.Ready() && b.Ready() {
		ta, tb := readyCondition(a).LastTransitionTime, readyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return afterOrZero(ta.Time, tb.Time)
		}
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return ra > rb
	}
	ca, cb := a.CreationTimestamp, b.CreationTimestamp
	if !ca.Equal(&cb) {
		return afterOrZero(ca.Time, cb.Time)
	}
	return a.Name < b.Name
}

// afterOrZero reports whether a is later than b, a zero time counting as the
// latest of all, as Kubernetes treats an unset timestamp.
func afterOrZero(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() && !b.IsZero()
	}
	return a.After(b)
}

// RankForDeletion returns the pods ordered so that the first are the ones to
// delete when scaling down. It does not change pods.
func RankForDeletion(pods []*api.Pod) []*api.Pod {
	ranked := slices.Clone(pods)
	slices.SortStableFunc(ranked, func(a, b *api.Pod) int {
		switch {
		case deleteFirst(a, b):
			return -1
		case deleteFirst(b, a):
			return 1
		}
		return 0
	})
	return ranked
}

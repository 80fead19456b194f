package sched

import (
	"fmt"
	"sort"
	"strings"
)

// ErrNoNodes is the message kube-scheduler gives when the cluster has no
// nodes at all.
const ErrNoNodes = "no nodes available to schedule pods"

// FitError says why no node could take a pod: how many nodes there were and
// how many nodes each reason rejected. It is the message users read in the
// pod's PodScheduled condition.
type FitError struct {
	// NumAllNodes is the number of nodes the pod was tried against.
	NumAllNodes int
	// Reasons counts, per reason, the nodes it rejected. A node rejected by
	// a filter with several reasons (Insufficient cpu and memory) counts
	// once for each.
	Reasons map[string]int
	// PreFilterMsg, when set, is why the pod fits no node whatever the
	// node (a volume hook's PodUnschedulableError); it replaces the
	// per-node counts, as in kube-scheduler.
	PreFilterMsg string
	// PostFilterMsg, when set, is why preemption did not help, after the
	// reasons.
	PostFilterMsg string
	// statuses are the nodes' statuses in the order of the Nodes' list,
	// for preemption.
	statuses []*Status
}

// Error renders the message as kube-scheduler does: the "count reason"
// strings sorted as strings (so "10 …" sorts before "2 …", as it does
// there), joined by ", ", and ended by a full stop.
func (e *FitError) Error() string {
	if e.NumAllNodes == 0 {
		return ErrNoNodes
	}
	post := ""
	if e.PostFilterMsg != "" {
		post = " " + e.PostFilterMsg + "."
	}
	if e.PreFilterMsg != "" {
		return fmt.Sprintf("0/%d nodes are available: %s.%s", e.NumAllNodes, e.PreFilterMsg, post)
	}
	parts := make([]string, 0, len(e.Reasons))
	for reason, n := range e.Reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d nodes are available: %s.%s", e.NumAllNodes, strings.Join(parts, ", "), post)
}

// newFitError counts the reasons of the statuses of the rejected nodes.
func newFitError(numAllNodes int, failed []*Status) *FitError {
	e := &FitError{NumAllNodes: numAllNodes, Reasons: map[string]int{}}
	for _, st := range failed {
		for _, r := range st.reasons {
			e.Reasons[r]++
		}
	}
	return e
}

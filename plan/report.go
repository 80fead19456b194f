package plan

import (
	"fmt"
	"strings"
)

// Report is what a plan found. Fits is false when anything would not
// go in: an invalid revision, a write admission refuses, a pod no node
// takes, a claim that would stay Pending, a rollout that cannot finish.
type Report struct {
	// Revision names what was planned (a commit, or the paths given).
	Revision string `json:"revision,omitempty"`
	// StoreRevision is the revision of the live store the plan forked.
	StoreRevision uint64 `json:"storeRevision"`
	Fits          bool   `json:"fits"`
	// Errors reject the whole revision, as they would reject its apply.
	Errors   []string  `json:"errors,omitempty"`
	Changes  []Change  `json:"changes"`
	Refusals []Finding `json:"refusals,omitempty"`
	// Unplaceable are the pods no node would take, by workload.
	Unplaceable   []Unplaced `json:"unplaceable,omitempty"`
	PendingClaims []Finding  `json:"pendingClaims,omitempty"`
	// EmptyServices are Services of the revision whose selector would
	// match no pod: reported, but they do not fail the plan.
	EmptyServices []Finding  `json:"emptyServices,omitempty"`
	Rollouts      []Rollout  `json:"rollouts,omitempty"`
	Pods          PodCounts  `json:"pods"`
	Nodes         []Capacity `json:"nodes"`
	Total         Capacity   `json:"total"`
	// Incomplete says the deadline ended the simulation before it
	// settled; what it found so far is reported.
	Incomplete bool   `json:"incomplete,omitempty"`
	Elapsed    string `json:"elapsed"`
}

// Change is one object the revision would create, update or prune.
type Change struct {
	Action string `json:"action"`
	Object string `json:"object"`
	// Fields are the paths an update changes.
	Fields []string `json:"fields,omitempty"`
}

// Finding names an object and what is wrong with it.
type Finding struct {
	Object  string `json:"object"`
	Message string `json:"message"`
}

// Unplaced counts the pods of one workload no node would take, with
// kube-scheduler's message for them.
type Unplaced struct {
	Workload string `json:"workload"`
	Pods     int    `json:"pods"`
	// Reasons are the distinct messages, most frequent first.
	Reasons []string `json:"reasons"`
}

// Rollout is whether a changed Deployment or StatefulSet would finish
// replacing its pods.
type Rollout struct {
	Workload string `json:"workload"`
	// Strategy states the bounds it rolls within.
	Strategy string `json:"strategy"`
	Replicas int32  `json:"replicas"`
	Updated  int32  `json:"updated"`
	Fits     bool   `json:"fits"`
	Message  string `json:"message"`
	// Warnings are disruption budgets the rollout would go below.
	Warnings []string `json:"warnings,omitempty"`
}

// PodCounts sum up what the controllers and the scheduler did.
type PodCounts struct {
	Created  int `json:"created"`
	Placed   int `json:"placed"`
	Deleted  int `json:"deleted"`
	Unplaced int `json:"unplaced"`
}

// Capacity is what a node (or the cluster) has left after the change.
type Capacity struct {
	Node string `json:"node,omitempty"`
	// MilliCPU, Memory (bytes) and Pods are allocatable minus requested.
	MilliCPU int64 `json:"milliCPU"`
	Memory   int64 `json:"memory"`
	Pods     int64 `json:"pods"`
	// Allocatable is the same three amounts in full.
	AllocatableMilliCPU int64 `json:"allocatableMilliCPU"`
	AllocatableMemory   int64 `json:"allocatableMemory"`
	AllocatablePods     int64 `json:"allocatablePods"`
}

// Failures lists, one line each, what makes the plan fail; empty when it
// fits.
func (r *Report) Failures() []string {
	var out []string
	out = append(out, r.Errors...)
	for _, f := range r.Refusals {
		out = append(out, fmt.Sprintf("%s refused: %s", f.Object, f.Message))
	}
	for _, u := range r.Unplaceable {
		out = append(out, fmt.Sprintf("%s: %d pod(s) unschedulable: %s", u.Workload, u.Pods, strings.Join(u.Reasons, "; ")))
	}
	for _, f := range r.PendingClaims {
		out = append(out, fmt.Sprintf("%s would stay Pending: %s", f.Object, f.Message))
	}
	for _, ro := range r.Rollouts {
		if !ro.Fits {
			out = append(out, fmt.Sprintf("%s rollout: %s", ro.Workload, ro.Message))
		}
	}
	if r.Incomplete {
		out = append(out, "the plan did not finish before its deadline")
	}
	return out
}

// Summary is the failures on one line, for a Source's status.
func (r *Report) Summary(max int) string {
	f := r.Failures()
	if len(f) == 0 {
		return "the plan fits"
	}
	s := strings.Join(f, "; ")
	if max > 0 && len(s) > max {
		s = s[:max-1] + "…"
	}
	return s
}

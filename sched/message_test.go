package sched

import (
	"errors"
	"fmt"
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestFitErrorMessage(t *testing.T) {
	tests := []struct {
		name    string
		nodes   int
		reasons map[string]int
		want    string
	}{
		{"two reasons", 5, map[string]int{ReasonInsufficientCPU: 3, ReasonNodeAffinity: 2},
			"0/5 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 3 Insufficient cpu."},
		{"one reason", 1, map[string]int{ReasonUnschedulable: 1},
			"0/1 nodes are available: 1 node(s) were unschedulable."},
		// sorted as strings, as kube-scheduler sorts them: "10 …" < "2 …"
		{"counts sort as strings", 12, map[string]int{ReasonInsufficientCPU: 10, ReasonUnschedulable: 2},
			"0/12 nodes are available: 10 Insufficient cpu, 2 node(s) were unschedulable."},
		{"same count, by reason", 3, map[string]int{ReasonInsufficientMemory: 1, UntoleratedTaintReason("a", "b"): 1, ReasonInsufficientCPU: 1},
			"0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) had untolerated taint {a: b}."},
		{"no nodes", 0, nil, "no nodes available to schedule pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&FitError{NumAllNodes: tt.nodes, Reasons: tt.reasons}).Error(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// The message as Schedule makes it from real filters: a node rejected for
// cpu and memory counts for both, every other node for its first reason.
func TestScheduleFitError(t *testing.T) {
	nodes := cluster(
		on(makeNode("small", allocatable("1", "1Gi", 110))),
		on(makeNode("tiny", allocatable("1", "1Gi", 110))),
		on(makeNode("cordoned", cordoned)),
		on(makeNode("tainted", taints(taint("dedicated", "db", api.TaintEffectNoSchedule)))),
		on(makeNode("busy"), makePod("a", requests("3", "15Gi"))),
		on(makeNode("down", condition(api.NodeReady, api.ConditionFalse))),
	)
	_, err := NewFramework(FrameworkOptions{}).Schedule(NewPodInfo(makePod("p", requests("2", "2Gi"))), nodes)
	var fe *FitError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want a FitError", err)
	}
	want := "0/6 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, " +
		"1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable, " +
		"3 Insufficient cpu, 3 Insufficient memory."
	if got := fe.Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}

	_, err = NewFramework(FrameworkOptions{}).Schedule(NewPodInfo(makePod("p")), NewNodes())
	if err == nil || err.Error() != ErrNoNodes {
		t.Errorf("no nodes: got %v", err)
	}
}

func ExampleFitError() {
	err := &FitError{NumAllNodes: 5, Reasons: map[string]int{ReasonInsufficientCPU: 3, ReasonNodeAffinity: 2}}
	fmt.Println(err)
	// Output: 0/5 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 3 Insufficient cpu.
}

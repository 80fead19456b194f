package sched

import (
	"slices"
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestTaintTolerationFilter(t *testing.T) {
	gpu := taint("dedicated", "gpu", api.TaintEffectNoSchedule)
	tests := []struct {
		name string
		node *api.Node
		tols []api.Toleration
		want string
	}{
		{"no taints", makeNode("n"), nil, ""},
		{"untolerated", makeNode("n", taints(gpu)), nil, "[node(s) had untolerated taint {dedicated: gpu}]"},
		{"Equal matches", makeNode("n", taints(gpu)), []api.Toleration{{Key: "dedicated", Value: "gpu", Effect: api.TaintEffectNoSchedule}}, ""},
		{"Equal by default", makeNode("n", taints(gpu)), []api.Toleration{{Key: "dedicated", Value: "gpu"}}, ""},
		{"wrong value", makeNode("n", taints(gpu)), []api.Toleration{{Key: "dedicated", Value: "cpu"}}, "[node(s) had untolerated taint {dedicated: gpu}]"},
		{"Exists on the key", makeNode("n", taints(gpu)), []api.Toleration{{Key: "dedicated", Operator: api.TolerationOpExists}}, ""},
		{"Exists on everything", makeNode("n", taints(gpu)), []api.Toleration{{Operator: api.TolerationOpExists}}, ""},
		{"other effect", makeNode("n", taints(gpu)), []api.Toleration{{Key: "dedicated", Value: "gpu", Effect: api.TaintEffectNoExecute}}, "[node(s) had untolerated taint {dedicated: gpu}]"},
		{"NoExecute blocks", makeNode("n", taints(taint("evict", "", api.TaintEffectNoExecute))), nil, "[node(s) had untolerated taint {evict: }]"},
		{"PreferNoSchedule does not block", makeNode("n", taints(taint("soft", "x", api.TaintEffectPreferNoSchedule))), nil, ""},
		{"first untolerated is named", makeNode("n", taints(taint("a", "1", api.TaintEffectNoSchedule), taint("b", "2", api.TaintEffectNoSchedule))),
			[]api.Toleration{{Key: "a", Operator: api.TolerationOpExists}}, "[node(s) had untolerated taint {b: 2}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPodInfo(makePod("p", tolerate(tt.tols...)))
			if got := reasonsOf(taintToleration{}.Filter(nil, p, NewNodeInfo(tt.node))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// Raw scores count untolerated PreferNoSchedule taints; normalised they
// are 100 - 100 * count / highest count.
func TestTaintTolerationScore(t *testing.T) {
	soft := func(k string) api.Taint { return taint(k, "", api.TaintEffectPreferNoSchedule) }
	nodes := []*NodeInfo{
		NewNodeInfo(makeNode("none")),
		NewNodeInfo(makeNode("one", taints(soft("a")))),
		NewNodeInfo(makeNode("two", taints(soft("a"), soft("b")))),
		NewNodeInfo(makeNode("hard", taints(soft("a"), taint("h", "", api.TaintEffectNoSchedule)))),
	}
	tests := []struct {
		name string
		tols []api.Toleration
		want []int64
	}{
		{"no tolerations", nil, []int64{100, 50, 0, 50}},
		{"tolerates a", []api.Toleration{{Key: "a", Operator: api.TolerationOpExists, Effect: api.TaintEffectPreferNoSchedule}}, []int64{100, 100, 0, 100}},
		{"tolerates everything", []api.Toleration{{Operator: api.TolerationOpExists}}, []int64{100, 100, 100, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPodInfo(makePod("p", tolerate(tt.tols...)))
			got := make([]int64, len(nodes))
			for i, n := range nodes {
				got[i] = taintToleration{}.Score(nil, p, n)
			}
			taintToleration{}.Normalize(nil, p, nodes, got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodeConditionFilters(t *testing.T) {
	bestEffort := makePod("p")
	burstable := makePod("p", requests("100m", ""))
	tests := []struct {
		name string
		node *api.Node
		pod  *api.Pod
		want string
	}{
		{"ready", makeNode("n"), bestEffort, ""},
		{"not ready", makeNode("n", condition(api.NodeReady, api.ConditionFalse)), burstable, "[node(s) had untolerated taint {node.kubernetes.io/not-ready: }]"},
		{"unreachable", makeNode("n", condition(api.NodeReady, api.ConditionUnknown)), burstable, "[node(s) had untolerated taint {node.kubernetes.io/unreachable: }]"},
		{"never reported", makeNode("n", func(n *api.Node) { n.Status.Conditions = nil }), burstable, "[node(s) had untolerated taint {node.kubernetes.io/not-ready: }]"},
		{"not ready, tolerated", makeNode("n", condition(api.NodeReady, api.ConditionFalse)),
			makePod("p", tolerate(api.Toleration{Key: api.TaintNodeNotReady, Operator: api.TolerationOpExists})), ""},
		{"memory pressure turns away BestEffort", makeNode("n", condition(api.NodeMemoryPressure, api.ConditionTrue)), bestEffort,
			"[node(s) had untolerated taint {node.kubernetes.io/memory-pressure: }]"},
		{"memory pressure takes Burstable", makeNode("n", condition(api.NodeMemoryPressure, api.ConditionTrue)), burstable, ""},
		{"disk pressure turns away all", makeNode("n", condition(api.NodeDiskPressure, api.ConditionTrue)), burstable,
			"[node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }]"},
		{"pid pressure", makeNode("n", condition(api.NodePIDPressure, api.ConditionTrue)), burstable,
			"[node(s) had untolerated taint {node.kubernetes.io/pid-pressure: }]"},
		{"pressure off", makeNode("n", condition(api.NodeDiskPressure, api.ConditionFalse)), burstable, ""},
		{"cordoned", makeNode("n", cordoned), burstable, "[node(s) were unschedulable]"},
		{"cordoned, tolerated", makeNode("n", cordoned),
			makePod("p", tolerate(api.Toleration{Key: api.TaintNodeUnschedulable, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule})), ""},
		// The memory-pressure toleration of Burstable pods holds for the
		// taint too, once a node controller sets it.
		{"memory-pressure taint takes Burstable", makeNode("n", taints(taint(TaintNodeMemoryPressure, "", api.TaintEffectNoSchedule))), burstable, ""},
	}
	fw := NewFramework(FrameworkOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonsOf(fw.Filter(NewPodInfo(tt.pod), NewNodeInfo(tt.node))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

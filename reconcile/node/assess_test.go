package node

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

var (
	epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg   = Config{GracePeriod: 40 * time.Second, EvictionTimeout: 5 * time.Second}
)

// ago is a time that long before epoch.
func ago(d time.Duration) time.Time { return epoch.Add(-d) }

type nodeOpt func(*api.Node)

// testNode is a node created an hour ago whose agent last heartbeated
// beat ago with Ready=status and no pressure.
func testNode(name string, status api.ConditionStatus, beat time.Duration, opts ...nodeOpt) *api.Node {
	hb := metav1.NewTime(ago(beat))
	n := &api.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7", CreationTimestamp: metav1.NewTime(ago(time.Hour))},
		Status: api.NodeStatus{Conditions: []api.NodeCondition{
			{Type: api.NodeReady, Status: status, Reason: "AgentReady", LastHeartbeatTime: hb, LastTransitionTime: metav1.NewTime(ago(time.Hour))},
			{Type: api.NodeMemoryPressure, Status: api.ConditionFalse, LastHeartbeatTime: hb},
			{Type: api.NodeDiskPressure, Status: api.ConditionFalse, LastHeartbeatTime: hb},
			{Type: api.NodePIDPressure, Status: api.ConditionFalse, LastHeartbeatTime: hb},
		}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// dark is a node already marked Unknown by an earlier pass.
func dark(name string, beat time.Duration, opts ...nodeOpt) *api.Node {
	n := testNode(name, api.ConditionUnknown, beat, opts...)
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = api.ConditionUnknown
		n.Status.Conditions[i].Reason = ReasonNodeStatusUnknown
	}
	return n
}

func withTaints(ts ...api.Taint) nodeOpt {
	return func(n *api.Node) { n.Spec.Taints = append(n.Spec.Taints, ts...) }
}

// cordoned is a node kubectl cordon marked unschedulable.
func cordoned(n *api.Node) { n.Spec.Unschedulable = true }

// pressure is a node whose agent reports the condition True.
func pressure(c api.NodeConditionType) nodeOpt {
	return func(n *api.Node) { findCondition(n.Status.Conditions, c).Status = api.ConditionTrue }
}

func neverPosted(created time.Duration) nodeOpt {
	return func(n *api.Node) {
		n.Status.Conditions = nil
		n.CreationTimestamp = metav1.NewTime(ago(created))
	}
}

func taint(key string, effect api.TaintEffect, added time.Duration) api.Taint {
	return api.Taint{Key: key, Effect: effect, TimeAdded: metaTime(ago(added))}
}

func unreachable(added time.Duration) nodeOpt {
	return withTaints(taint(api.TaintNodeUnreachable, api.TaintEffectNoSchedule, added), taint(api.TaintNodeUnreachable, api.TaintEffectNoExecute, added))
}

type podOpt func(*api.Pod)

// testPod is a running, ready pod bound to node.
func testPod(name, node string, opts ...podOpt) *api.Pod {
	p := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "9"},
		Spec:       api.PodSpec{NodeName: node},
		Status: api.PodStatus{Phase: api.PodRunning, Conditions: []api.PodCondition{
			{Type: api.PodScheduled, Status: api.ConditionTrue},
			{Type: api.ContainersReady, Status: api.ConditionTrue},
			{Type: api.PodReady, Status: api.ConditionTrue},
		}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func tolerates(key string, seconds *int64) podOpt {
	return func(p *api.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, api.Toleration{Key: key, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoExecute, TolerationSeconds: seconds})
	}
}

func mirror(p *api.Pod) { p.Annotations = map[string]string{api.AnnotationMirror: "n"} }

func terminating(p *api.Pod) { t := metav1.NewTime(ago(time.Second)); p.DeletionTimestamp = &t }

func succeeded(p *api.Pod) {
	p.Status.Phase = api.PodSucceeded
	p.Status.Conditions = nil
}

func seconds(s int64) *int64 { return &s }

// summary names each action as "Type object [reason]".
func summary(p Plan) []string {
	var out []string
	for _, a := range p.Actions {
		s := fmt.Sprintf("%s %s", a.Type, a.Object.GetName())
		if a.Event.Reason != "" {
			s += " " + a.Event.Reason
		}
		out = append(out, s)
	}
	return out
}

// podsOf serves assess the pods by node.
func podsOf(pods []*api.Pod) func(string) []*api.Pod {
	return func(node string) []*api.Pod {
		var out []*api.Pod
		for _, p := range pods {
			if p.Spec.NodeName == node {
				out = append(out, p)
			}
		}
		return out
	}
}

// seenAtBeat is a State.Seen in which each node's heartbeat was seen when
// it was stamped: the clocks agree.
func seenAtBeat(nodes []*api.Node) map[string]Observation {
	seen := map[string]Observation{}
	for _, n := range nodes {
		beat := n.CreationTimestamp.Time
		if c := findCondition(n.Status.Conditions, api.NodeReady); c != nil && !c.LastHeartbeatTime.IsZero() {
			beat = c.LastHeartbeatTime.Time
		}
		seen[n.Name] = Observation{Heartbeat: beat, At: beat}
	}
	return seen
}

func nodeUpdate(t *testing.T, p Plan, name string) *api.Node {
	t.Helper()
	for _, a := range p.Actions {
		if a.Type == UpdateNode && a.Object.GetName() == name {
			return a.Object.(*api.Node)
		}
	}
	t.Fatalf("no update of node %s in %v", name, summary(p))
	return nil
}

func taintStrings(ts []api.Taint) []string {
	var out []string
	for _, t := range ts {
		s := t.Key + ":" + string(t.Effect)
		if t.TimeAdded != nil {
			s += "@" + epoch.Sub(t.TimeAdded.Time).String()
		}
		out = append(out, s)
	}
	return out
}

func TestAssess(t *testing.T) {
	healthy := testNode("b", api.ConditionTrue, 5*time.Second)
	tests := []struct {
		name  string
		nodes []*api.Node
		pods  []*api.Pod
		prev  State
		// seen, if set, is what the last pass saw; by default each node
		// was seen when its heartbeat was stamped (no clock skew).
		seen  map[string]Observation
		want  []string
		state State
		wake  time.Duration // after epoch; 0: none expected to be checked
		check func(t *testing.T, p Plan)
	}{
		{
			name:  "heartbeat 10s old: nothing to do",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, 10*time.Second)},
			wake:  30*time.Second + time.Nanosecond,
		},
		{
			name:  "heartbeat exactly the grace period old: not yet",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, 40*time.Second), healthy},
			pods:  []*api.Pod{testPod("p1", "a")},
		},
		{
			name:  "heartbeat past the grace period: Unknown, tainted, pods not ready, not yet evicted",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, 41*time.Second), healthy},
			pods:  []*api.Pod{testPod("p1", "a"), testPod("m", "a", mirror)},
			want:  []string{"UpdateNode a NodeUnreachable", "UpdatePod p1 NodeNotReady", "UpdatePod m NodeNotReady"},
			wake:  5 * time.Second,
			check: func(t *testing.T, p Plan) {
				n := nodeUpdate(t, p, "a")
				for _, c := range n.Status.Conditions {
					if c.Status != api.ConditionUnknown || c.Reason != ReasonNodeStatusUnknown || c.Message != MessageNodeStatusUnknown ||
						!c.LastTransitionTime.Time.Equal(epoch) || !c.LastHeartbeatTime.Time.Equal(ago(41*time.Second)) {
						t.Errorf("condition %+v", c)
					}
				}
				if got, want := taintStrings(n.Spec.Taints), []string{"node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute@0s"}; !slices.Equal(got, want) {
					t.Errorf("taints %v, want %v", got, want)
				}
				pod := p.Actions[1].Object.(*api.Pod)
				for _, c := range pod.Status.Conditions {
					wantFalse := c.Type == api.PodReady || c.Type == api.ContainersReady
					if wantFalse != (c.Status == api.ConditionFalse) || (wantFalse && c.Reason != ReasonNodeNotReady) {
						t.Errorf("pod condition %+v", c)
					}
				}
			},
		},
		{
			name:  "first sight of a node with an old heartbeat: the grace period starts now",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, 10*time.Minute), healthy},
			seen:  map[string]Observation{},
			wake:  40*time.Second + time.Nanosecond,
			check: func(t *testing.T, p Plan) {
				if got, want := p.State.Seen["a"], (Observation{Heartbeat: ago(10 * time.Minute), At: epoch}); got != want {
					t.Errorf("seen %+v, want %+v", got, want)
				}
			},
		},
		{
			name:  "agent clock 5 minutes behind, heartbeat renewed since the last pass: healthy",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, 5*time.Minute), healthy},
			seen:  map[string]Observation{"a": {Heartbeat: ago(5*time.Minute + 10*time.Second), At: ago(10 * time.Second)}, "b": {Heartbeat: ago(5 * time.Second), At: ago(5 * time.Second)}},
			wake:  35*time.Second + time.Nanosecond,
		},
		{
			name:  "agent clock ahead, heartbeat unchanged for 41s of the controller's time: Unknown",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, -time.Hour), healthy},
			seen:  map[string]Observation{"a": {Heartbeat: ago(-time.Hour), At: ago(41 * time.Second)}, "b": {Heartbeat: ago(5 * time.Second), At: ago(5 * time.Second)}},
			want:  []string{"UpdateNode a NodeUnreachable"},
		},
		{
			name:  "never posted status, created 41s ago: Unknown from creation",
			nodes: []*api.Node{testNode("a", "", 0, neverPosted(41*time.Second)), healthy},
			want:  []string{"UpdateNode a NodeUnreachable"},
			check: func(t *testing.T, p Plan) {
				n := nodeUpdate(t, p, "a")
				if len(n.Status.Conditions) != 4 {
					t.Fatalf("conditions %+v", n.Status.Conditions)
				}
				for _, c := range n.Status.Conditions {
					if c.Status != api.ConditionUnknown || c.Reason != ReasonNodeStatusNeverUpdated || !c.LastHeartbeatTime.Time.Equal(ago(41*time.Second)) {
						t.Errorf("condition %+v", c)
					}
				}
			},
		},
		{
			name:  "never posted status, created 10s ago, seen for the first time: wait from creation",
			nodes: []*api.Node{testNode("a", "", 0, neverPosted(10*time.Second))},
			seen:  map[string]Observation{},
			wake:  30*time.Second + time.Nanosecond,
		},
		{
			name:  "cordoned: the unschedulable taint, no event, no pod read",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, time.Second, cordoned), healthy},
			want:  []string{"UpdateNode a"},
			check: func(t *testing.T, p Plan) {
				if got := taintStrings(nodeUpdate(t, p, "a").Spec.Taints); !slices.Equal(got, []string{"node.kubernetes.io/unschedulable:NoSchedule"}) {
					t.Errorf("taints %v", got)
				}
			},
		},
		{
			name: "uncordoned: the unschedulable taint removed, the operator's kept",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, time.Second, withTaints(
				api.Taint{Key: api.TaintNodeUnschedulable, Effect: api.TaintEffectNoSchedule},
				api.Taint{Key: "dedicated", Value: "db", Effect: api.TaintEffectNoSchedule})), healthy},
			want: []string{"UpdateNode a"},
			check: func(t *testing.T, p Plan) {
				if got := taintStrings(nodeUpdate(t, p, "a").Spec.Taints); !slices.Equal(got, []string{"dedicated:NoSchedule"}) {
					t.Errorf("taints %v", got)
				}
			},
		},
		{
			name:  "cordoned and tainted already: nothing to do",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, time.Second, cordoned, withTaints(api.Taint{Key: api.TaintNodeUnschedulable, Effect: api.TaintEffectNoSchedule})), healthy},
		},
		{
			name:  "memory and disk pressure: their taints",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, time.Second, pressure(api.NodeMemoryPressure), pressure(api.NodeDiskPressure)), healthy},
			want:  []string{"UpdateNode a"},
			check: func(t *testing.T, p Plan) {
				if got := taintStrings(nodeUpdate(t, p, "a").Spec.Taints); !slices.Equal(got, []string{"node.kubernetes.io/memory-pressure:NoSchedule", "node.kubernetes.io/disk-pressure:NoSchedule"}) {
					t.Errorf("taints %v", got)
				}
			},
		},
		{
			name: "under PID pressure, then dark: the condition turns Unknown and its taint goes, the cordon's stays",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, 41*time.Second, cordoned, pressure(api.NodePIDPressure), withTaints(
				api.Taint{Key: api.TaintNodeUnschedulable, Effect: api.TaintEffectNoSchedule},
				api.Taint{Key: api.TaintNodePIDPressure, Effect: api.TaintEffectNoSchedule})), healthy},
			want: []string{"UpdateNode a NodeUnreachable"},
			check: func(t *testing.T, p Plan) {
				want := []string{"node.kubernetes.io/unschedulable:NoSchedule", "node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute@0s"}
				if got := taintStrings(nodeUpdate(t, p, "a").Spec.Taints); !slices.Equal(got, want) {
					t.Errorf("taints %v, want %v", got, want)
				}
			},
		},
		{
			name:  "Ready=False: not-ready taints, conditions and pods left to the agent",
			nodes: []*api.Node{testNode("a", api.ConditionFalse, time.Second), healthy},
			pods:  []*api.Pod{testPod("p1", "a")},
			want:  []string{"UpdateNode a NodeNotReady"},
			wake:  5 * time.Second,
			check: func(t *testing.T, p Plan) {
				n := nodeUpdate(t, p, "a")
				if got := taintStrings(n.Spec.Taints); !slices.Equal(got, []string{"node.kubernetes.io/not-ready:NoSchedule", "node.kubernetes.io/not-ready:NoExecute@0s"}) {
					t.Errorf("taints %v", got)
				}
				if n.Status.Conditions[0].Status != api.ConditionFalse {
					t.Errorf("Ready changed: %+v", n.Status.Conditions[0])
				}
			},
		},
		{
			name:  "Ready=False for longer than the eviction timeout: pods evicted",
			nodes: []*api.Node{testNode("a", api.ConditionFalse, time.Second, withTaints(taint(api.TaintNodeNotReady, api.TaintEffectNoSchedule, 6*time.Second), taint(api.TaintNodeNotReady, api.TaintEffectNoExecute, 6*time.Second))), healthy},
			pods:  []*api.Pod{testPod("p1", "a")},
			want:  []string{"EvictPod p1 TaintManagerEviction"},
		},
		{
			name: "Ready again: managed taints removed, the operator's kept",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, time.Second,
				withTaints(api.Taint{Key: "dedicated", Value: "db", Effect: api.TaintEffectNoSchedule}), unreachable(time.Minute))},
			pods: []*api.Pod{testPod("p1", "a")},
			want: []string{"UpdateNode a NodeReady"},
			check: func(t *testing.T, p Plan) {
				n := nodeUpdate(t, p, "a")
				if got := taintStrings(n.Spec.Taints); !slices.Equal(got, []string{"dedicated:NoSchedule"}) {
					t.Errorf("taints %v", got)
				}
			},
		},
		{
			name:  "an operator's NoExecute taint on a Ready node: a pod not tolerating it evicted at once, others per their tolerations",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, time.Second, withTaints(taint("maintenance", api.TaintEffectNoExecute, 10*time.Second))), healthy},
			pods: []*api.Pod{
				testPod("plain", "a"),
				testPod("forever", "a", tolerates("maintenance", nil)),
				testPod("for30s", "a", tolerates("maintenance", seconds(30))),
				testPod("for5s", "a", tolerates("maintenance", seconds(5))),
				testPod("mirror", "a", mirror),
			},
			want: []string{"EvictPod plain TaintManagerEviction", "EvictPod for5s TaintManagerEviction"},
			wake: 20 * time.Second,
			check: func(t *testing.T, p Plan) {
				if got := p.Actions[0].Taint; got.Key != "maintenance" || got.Effect != api.TaintEffectNoExecute {
					t.Errorf("eviction for taint %+v", got)
				}
			},
		},
		{
			name:  "an operator's NoExecute taint without timeAdded: stamped now, without an event; untolerated pods go",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, time.Second, withTaints(api.Taint{Key: "maintenance", Effect: api.TaintEffectNoExecute}, api.Taint{Key: "dedicated", Effect: api.TaintEffectNoSchedule})), healthy},
			pods:  []*api.Pod{testPod("plain", "a"), testPod("for30s", "a", tolerates("maintenance", seconds(30)))},
			want:  []string{"UpdateNode a", "EvictPod plain TaintManagerEviction"},
			wake:  30 * time.Second,
			check: func(t *testing.T, p Plan) {
				n := nodeUpdate(t, p, "a")
				if got := taintStrings(n.Spec.Taints); !slices.Equal(got, []string{"maintenance:NoExecute@0s", "dedicated:NoSchedule"}) {
					t.Errorf("taints %v", got)
				}
			},
		},
		{
			name:  "an operator's NoSchedule taint evicts nothing",
			nodes: []*api.Node{testNode("a", api.ConditionTrue, time.Second, withTaints(taint("dedicated", api.TaintEffectNoSchedule, time.Minute))), healthy},
			pods:  []*api.Pod{testPod("plain", "a")},
		},
		{
			name:  "unreachable 4s: nothing evicted yet",
			nodes: []*api.Node{dark("a", time.Minute, unreachable(4*time.Second)), healthy},
			pods:  []*api.Pod{testPod("p1", "a", func(p *api.Pod) { p.Status.Conditions = nil })},
			wake:  time.Second,
		},
		{
			name:  "unreachable 5s: pods that do not tolerate it evicted, mirror, terminating, finished and tolerating ones kept",
			nodes: []*api.Node{dark("a", time.Minute, unreachable(5*time.Second)), healthy},
			pods: []*api.Pod{
				testPod("plain", "a"),
				testPod("mirror", "a", mirror),
				testPod("leaving", "a", terminating),
				testPod("done", "a", succeeded),
				testPod("forever", "a", tolerates(api.TaintNodeUnreachable, nil)),
				testPod("for30s", "a", tolerates(api.TaintNodeUnreachable, seconds(30))),
				testPod("for0s", "a", tolerates(api.TaintNodeUnreachable, seconds(0))),
				testPod("other", "a", tolerates(api.TaintNodeNotReady, nil)),
			},
			want: []string{
				"UpdatePod plain NodeNotReady", "UpdatePod mirror NodeNotReady", "UpdatePod leaving NodeNotReady",
				"UpdatePod forever NodeNotReady", "UpdatePod for30s NodeNotReady", "UpdatePod for0s NodeNotReady", "UpdatePod other NodeNotReady",
				"EvictPod plain TaintManagerEviction", "EvictPod for0s TaintManagerEviction", "EvictPod other TaintManagerEviction",
			},
			wake: 25 * time.Second,
		},
		{
			name:  "every node dark: no NoExecute taint, nothing evicted, an event on each node",
			nodes: []*api.Node{dark("a", time.Minute, unreachable(time.Minute)), testNode("b", api.ConditionTrue, 41*time.Second)},
			pods:  []*api.Pod{testPod("p1", "a", func(p *api.Pod) { p.Status.Conditions = nil })},
			want: []string{"RecordEvent a FullDisruption", "RecordEvent b FullDisruption",
				"UpdateNode a NodeUnreachable", "UpdateNode b NodeUnreachable"},
			state: State{FullDisruption: true},
			check: func(t *testing.T, p Plan) {
				for _, name := range []string{"a", "b"} {
					want := []string{"node.kubernetes.io/unreachable:NoSchedule@1m0s"}
					if name == "b" {
						want = []string{"node.kubernetes.io/unreachable:NoSchedule"}
					}
					if got := taintStrings(nodeUpdate(t, p, name).Spec.Taints); !slices.Equal(got, want) {
						t.Errorf("node %s taints %v, want %v", name, got, want)
					}
				}
			},
		},
		{
			name: "still every node dark: no second event",
			nodes: []*api.Node{dark("a", time.Minute, withTaints(taint(api.TaintNodeUnreachable, api.TaintEffectNoSchedule, time.Minute))),
				dark("b", time.Minute, withTaints(taint(api.TaintNodeUnreachable, api.TaintEffectNoSchedule, time.Minute)))},
			pods:  []*api.Pod{testPod("p1", "a", func(p *api.Pod) { p.Status.Conditions = nil })},
			prev:  State{FullDisruption: true},
			state: State{FullDisruption: true},
		},
		{
			name:  "one node back: disruption ends, the dark node gets a fresh NoExecute taint",
			nodes: []*api.Node{dark("a", time.Minute, withTaints(taint(api.TaintNodeUnreachable, api.TaintEffectNoSchedule, time.Minute))), healthy},
			pods:  []*api.Pod{testPod("p1", "a", func(p *api.Pod) { p.Status.Conditions = nil })},
			prev:  State{FullDisruption: true},
			want:  []string{"RecordEvent a FullDisruptionEnded", "RecordEvent b FullDisruptionEnded", "UpdateNode a NodeUnreachable"},
			wake:  5 * time.Second,
			check: func(t *testing.T, p Plan) {
				if got := taintStrings(nodeUpdate(t, p, "a").Spec.Taints); !slices.Equal(got, []string{"node.kubernetes.io/unreachable:NoSchedule@1m0s", "node.kubernetes.io/unreachable:NoExecute@0s"}) {
					t.Errorf("taints %v", got)
				}
			},
		},
		{
			name:  "not ready, then dark: not-ready taints give way to unreachable ones",
			nodes: []*api.Node{testNode("a", api.ConditionFalse, 50*time.Second, withTaints(taint(api.TaintNodeNotReady, api.TaintEffectNoSchedule, 50*time.Second), taint(api.TaintNodeNotReady, api.TaintEffectNoExecute, 50*time.Second))), healthy},
			want:  []string{"UpdateNode a NodeUnreachable"},
			check: func(t *testing.T, p Plan) {
				n := nodeUpdate(t, p, "a")
				if got := taintStrings(n.Spec.Taints); !slices.Equal(got, []string{"node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute@0s"}) {
					t.Errorf("taints %v", got)
				}
				if msg := p.Actions[0].Event.Message; msg != "Node a: no heartbeat for more than 40s, conditions set Unknown; tainted node.kubernetes.io/unreachable:NoSchedule, node.kubernetes.io/unreachable:NoExecute; removed taints node.kubernetes.io/not-ready:NoSchedule, node.kubernetes.io/not-ready:NoExecute" {
					t.Errorf("event message %q", msg)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := tc.prev
			prev.Seen = tc.seen
			if prev.Seen == nil {
				prev.Seen = seenAtBeat(tc.nodes)
			}
			plan := assess(tc.nodes, nil, podsOf(tc.pods), epoch, cfg, prev)
			if got := summary(plan); !slices.Equal(got, tc.want) {
				t.Errorf("actions\n got %q\nwant %q", got, tc.want)
			}
			if plan.State.FullDisruption != tc.state.FullDisruption {
				t.Errorf("full disruption %v, want %v", plan.State.FullDisruption, tc.state.FullDisruption)
			}
			if tc.wake != 0 && !plan.Wake.Equal(epoch.Add(tc.wake)) {
				t.Errorf("wake at %v after epoch, want %v", plan.Wake.Sub(epoch), tc.wake)
			}
			if tc.check != nil {
				tc.check(t, plan)
			}
		})
	}
}

// TestAssessLeaseRenewals: a node's Lease renewals are its heartbeat, as
// much as its Ready condition's: an agent that renews its Lease and posted
// status ten minutes ago is alive; one whose Lease went stale is not,
// whatever its status says.
func TestAssessLeaseRenewals(t *testing.T) {
	posted := testNode("posted-long-ago", api.ConditionTrue, 10*time.Minute)
	stale := testNode("stale-lease", api.ConditionTrue, 10*time.Minute)
	fresh := testNode("never-posted", "", 0, neverPosted(time.Minute))
	nodes := []*api.Node{posted, stale, fresh}
	seen := seenAtBeat(nodes)
	seen[stale.Name] = Observation{Heartbeat: ago(50 * time.Second), At: ago(50 * time.Second)}
	seen[fresh.Name] = Observation{Heartbeat: ago(20 * time.Second), At: ago(20 * time.Second)}
	renewals := map[string]time.Time{
		posted.Name: ago(5 * time.Second),
		stale.Name:  ago(50 * time.Second),
		fresh.Name:  ago(20 * time.Second),
	}
	plan := assess(nodes, renewals, podsOf(nil), epoch, cfg, State{Seen: seen})
	if got, want := summary(plan), []string{"UpdateNode stale-lease NodeUnreachable"}; !slices.Equal(got, want) {
		t.Errorf("actions\n got %q\nwant %q", got, want)
	}
	if got := plan.State.Seen[posted.Name]; !got.Heartbeat.Equal(ago(5*time.Second)) || !got.At.Equal(epoch) {
		t.Errorf("renewed node seen %+v, want its renewal seen now", got)
	}
	if got := plan.State.Seen[fresh.Name]; !got.At.Equal(ago(20 * time.Second)) {
		t.Errorf("node with no status seen %+v, want its renewal seen 20s ago", got)
	}
	if !plan.Wake.Equal(ago(20 * time.Second).Add(cfg.GracePeriod + time.Nanosecond)) {
		t.Errorf("wake at %v after epoch", plan.Wake.Sub(epoch))
	}

	// Without the renewals, the node that posted long ago is dark too.
	plan = assess(nodes, nil, podsOf(nil), epoch, cfg, State{Seen: seenAtBeat(nodes)})
	if got := summary(plan); !slices.Contains(got, "UpdateNode posted-long-ago NodeUnreachable") {
		t.Errorf("without renewals: %q", got)
	}
}

// TestAssessConverges applies a plan's node and pod writes and assesses
// again: the second pass has nothing to write.
func TestAssessConverges(t *testing.T) {
	nodes := []*api.Node{
		testNode("a", api.ConditionTrue, time.Minute),
		testNode("b", api.ConditionFalse, time.Second),
		testNode("c", api.ConditionTrue, time.Second, unreachable(time.Hour)),
		testNode("d", api.ConditionTrue, time.Second),
	}
	pods := []*api.Pod{testPod("p1", "a", tolerates(api.TaintNodeUnreachable, nil))}
	plan := assess(nodes, nil, podsOf(pods), epoch, cfg, State{Seen: seenAtBeat(nodes)})
	if len(plan.Actions) != 4 {
		t.Fatalf("first pass: %v", summary(plan))
	}
	byName := map[string]*api.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	for _, a := range plan.Actions {
		switch o := a.Object.(type) {
		case *api.Node:
			byName[o.Name] = o
		case *api.Pod:
			pods = []*api.Pod{o}
		}
	}
	nodes = []*api.Node{byName["a"], byName["b"], byName["c"], byName["d"]}
	if again := assess(nodes, nil, podsOf(pods), epoch.Add(time.Second), cfg, plan.State); len(again.Actions) != 0 {
		t.Errorf("second pass: %v", summary(again))
	}
}

func TestEvictionTime(t *testing.T) {
	added := epoch
	taint := &api.Taint{Key: api.TaintNodeUnreachable, Effect: api.TaintEffectNoExecute, TimeAdded: metaTime(added)}
	tests := []struct {
		name        string
		tolerations []api.Toleration
		want        time.Duration
		never       bool
	}{
		{name: "none: the eviction timeout", want: 5 * time.Second},
		{name: "the default 300s toleration, if a pod asks for it", tolerations: []api.Toleration{{Key: api.TaintNodeUnreachable, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoExecute, TolerationSeconds: seconds(300)}}, want: 300 * time.Second},
		{name: "the shortest of two", tolerations: []api.Toleration{
			{Operator: api.TolerationOpExists, TolerationSeconds: seconds(60)},
			{Key: api.TaintNodeUnreachable, Operator: api.TolerationOpExists, TolerationSeconds: seconds(20)},
		}, want: 20 * time.Second},
		{name: "no seconds: forever", tolerations: []api.Toleration{{Operator: api.TolerationOpExists}}, never: true},
		{name: "negative: at once", tolerations: []api.Toleration{{Operator: api.TolerationOpExists, TolerationSeconds: seconds(-3)}}},
		{name: "another effect does not match", tolerations: []api.Toleration{{Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule}}, want: 5 * time.Second},
		{name: "Equal with the wrong value does not match", tolerations: []api.Toleration{{Key: api.TaintNodeUnreachable, Value: "x"}}, want: 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &api.Pod{Spec: api.PodSpec{Tolerations: tc.tolerations}}
			at, ok := evictionTime(pod, taint, cfg.EvictionTimeout)
			if ok == tc.never {
				t.Fatalf("evicted: %v, want %v", ok, !tc.never)
			}
			if ok && at.Sub(added) != tc.want {
				t.Errorf("evicted after %v, want %v", at.Sub(added), tc.want)
			}
		})
	}
}

package node

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// Reasons and messages the controller writes on node and pod conditions
// and in events, spelled as Kubernetes' node lifecycle controller and taint
// manager spell them where they have a counterpart.
const (
	// ReasonNodeStatusUnknown: the agent stopped heartbeating.
	ReasonNodeStatusUnknown = "NodeStatusUnknown"
	// ReasonNodeStatusNeverUpdated: the agent never posted the condition.
	ReasonNodeStatusNeverUpdated = "NodeStatusNeverUpdated"
	// ReasonNodeUnreachable: the node was marked Unknown and tainted.
	ReasonNodeUnreachable = "NodeUnreachable"
	// ReasonNodeNotReady: the node reports Ready=False and was tainted, or
	// (on a pod) the pod's node is not ready so the pod is not either.
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonNodeReady: the node is Ready again and its taints are gone.
	ReasonNodeReady = "NodeReady"
	// ReasonTaintManagerEviction: a pod was deleted from an unreachable or
	// not-ready node.
	ReasonTaintManagerEviction = "TaintManagerEviction"
	// ReasonFullDisruption: every node is unreachable, so nothing is evicted.
	ReasonFullDisruption = "FullDisruption"
	// ReasonFullDisruptionEnded: some node is reachable again; evictions
	// resume with fresh timeouts.
	ReasonFullDisruptionEnded = "FullDisruptionEnded"

	// Messages of the conditions the controller writes, as Kubernetes
	// words them with the kubelet called the agent.
	MessageNodeStatusUnknown      = "Agent stopped posting node status."
	MessageNodeStatusNeverUpdated = "Agent never posted node status."
	MessagePodNodeNotReady        = "Node is not ready"
)

// agentConditions are the node conditions the agent owns; an unreachable
// node has them all turned Unknown.
var agentConditions = []api.NodeConditionType{api.NodeReady, api.NodeMemoryPressure, api.NodeDiskPressure, api.NodePIDPressure}

// Config is the timing of node health (SPEC §2's server flags).
type Config struct {
	// GracePeriod: no heartbeat for this long and the node is Unknown.
	GracePeriod time.Duration
	// EvictionTimeout: this long after the node was tainted NoExecute, its
	// pods that do not tolerate the taint are deleted.
	EvictionTimeout time.Duration
}

// State is what a pass remembers for the next one.
type State struct {
	// FullDisruption: every node was unreachable at the last pass.
	FullDisruption bool
	// Seen is, per node, the last heartbeat seen and when it was seen.
	Seen map[string]Observation
}

// Observation is when the controller saw a node's heartbeat change. The
// grace period runs from then, on the controller's clock, not from the
// heartbeat's own timestamp, as Kubernetes' node controller does: an agent
// whose clock is off is not taken for dead, and a control plane that was
// down for a while gives every node a full grace period when it starts
// instead of finding every heartbeat stale at once.
type Observation struct {
	// Heartbeat is the later of the node's Lease renewTime and its Ready
	// condition's lastHeartbeatTime (the node's creation time while it has
	// neither).
	Heartbeat time.Time
	// At is when the controller first saw that heartbeat.
	At time.Time
}

// ActionType says what an Action writes.
type ActionType string

// Action types.
const (
	// UpdateNode writes the node's new conditions and taints.
	UpdateNode ActionType = "UpdateNode"
	// UpdatePod writes a pod's Ready and ContainersReady conditions False.
	UpdatePod ActionType = "UpdatePod"
	// EvictPod deletes a pod gracefully.
	EvictPod ActionType = "EvictPod"
	// RecordEvent only records an event.
	RecordEvent ActionType = "RecordEvent"
)

// Action is one write a pass decided on, applied in a transaction of its
// own so that a conflict on one object does not hold the others back.
type Action struct {
	Type ActionType
	// Object is, for UpdateNode and UpdatePod, the changed copy, carrying
	// the resourceVersion it was read at; for EvictPod the pod as read; for
	// RecordEvent the object the event is about.
	Object api.Object
	// Event, if it has a Reason, is recorded in the same transaction as
	// the write, so it is seen only if the write happened.
	Event Event
	// Taint is, for EvictPod, the NoExecute taint the pod leaves for: the
	// eviction is dropped if the node no longer has it when it is made.
	Taint api.Taint
}

// Event is what an Action records about its object.
type Event struct {
	Type    string
	Reason  string
	Message string
}

// Plan is what assess decided.
type Plan struct {
	Actions []Action
	State   State
	// Wake is the earliest time at which a deadline (a grace period or an
	// eviction) passes with no write to notice it; zero means none.
	Wake time.Time
}

func (p *Plan) wakeAt(t time.Time) {
	if p.Wake.IsZero() || t.Before(p.Wake) {
		p.Wake = t
	}
}

// health is one node's standing at now.
type health struct {
	node *api.Node
	// ready is the Ready status to act on: Unknown when the node is dark,
	// empty when the agent has not posted it yet and the grace period runs.
	ready      api.ConditionStatus
	conditions []api.NodeCondition
	// darkened: this pass turned conditions Unknown.
	darkened bool
}

// assess decides, from the nodes, their Leases' renewal times (by node
// name) and what the last pass saw of them, what the controller writes at
// now. It asks podsOf for the pods bound to a node
// only when the node is unreachable or tainted, so a healthy fleet costs no
// pod reads. It is pure: the same inputs give the same plan.
func assess(nodes []*api.Node, renewals map[string]time.Time, podsOf func(node string) []*api.Pod, now time.Time, cfg Config, prev State) Plan {
	plan := Plan{State: State{Seen: make(map[string]Observation, len(nodes))}}
	hs := make([]health, len(nodes))
	allDark := len(nodes) > 0
	for i, n := range nodes {
		hs[i] = observe(n, renewals[n.Name], prev.Seen[n.Name], now, cfg, &plan)
		if hs[i].ready != api.ConditionUnknown {
			allDark = false
		}
	}
	plan.State.FullDisruption = allDark
	if allDark != prev.FullDisruption {
		ev := Event{Type: api.EventTypeWarning, Reason: ReasonFullDisruption,
			Message: fmt.Sprintf("All %d nodes are unreachable: the control plane is more likely cut off than every node, so no pod is evicted", len(nodes))}
		if !allDark {
			ev = Event{Type: api.EventTypeNormal, Reason: ReasonFullDisruptionEnded,
				Message: "Some node is reachable again: pods of unreachable nodes are evicted after the eviction timeout"}
		}
		for _, n := range nodes {
			plan.Actions = append(plan.Actions, Action{Type: RecordEvent, Object: n, Event: ev})
		}
	}
	for _, h := range hs {
		plan.node(h, podsOf, now, cfg, allDark)
	}
	return plan
}

// observe reads a node's heartbeat, the renewal of its Lease (renewed, zero
// if it has none) or else its Ready condition's, and turns its agent's
// conditions Unknown once the grace period has passed without a new one.
// last is what the previous pass saw (zero if none); a node seen for the
// first time is given the grace period from now, or, if its agent never
// posted status nor renewed a Lease, from its creation.
func observe(n *api.Node, renewed time.Time, last Observation, now time.Time, cfg Config, plan *Plan) health {
	h := health{node: n, conditions: n.Status.Conditions}
	beat := n.CreationTimestamp.Time
	ready := findCondition(n.Status.Conditions, api.NodeReady)
	if ready != nil {
		h.ready = ready.Status
		if !ready.LastHeartbeatTime.IsZero() {
			beat = ready.LastHeartbeatTime.Time
		}
	}
	if renewed.After(beat) {
		beat = renewed
	}
	obs := last
	switch {
	case obs.At.IsZero() && ready == nil && renewed.IsZero():
		obs = Observation{Heartbeat: beat, At: beat}
	case obs.At.IsZero() || !obs.Heartbeat.Equal(beat):
		obs = Observation{Heartbeat: beat, At: now}
	}
	plan.State.Seen[n.Name] = obs
	deadline := obs.At.Add(cfg.GracePeriod)
	if !now.After(deadline) {
		plan.wakeAt(deadline.Add(time.Nanosecond))
		return h
	}
	h.ready = api.ConditionUnknown
	conds := make([]api.NodeCondition, len(n.Status.Conditions))
	copy(conds, n.Status.Conditions)
	for _, t := range agentConditions {
		c := findCondition(conds, t)
		switch {
		case c == nil:
			conds = append(conds, api.NodeCondition{
				Type: t, Status: api.ConditionUnknown,
				Reason: ReasonNodeStatusNeverUpdated, Message: MessageNodeStatusNeverUpdated,
				LastHeartbeatTime: n.CreationTimestamp, LastTransitionTime: metav1.NewTime(now),
			})
			h.darkened = true
		case c.Status != api.ConditionUnknown:
			c.Status = api.ConditionUnknown
			c.Reason, c.Message = ReasonNodeStatusUnknown, MessageNodeStatusUnknown
			c.LastTransitionTime = metav1.NewTime(now)
			h.darkened = true
		}
	}
	if h.darkened {
		h.conditions = conds
	}
	return h
}

// node plans one node: its conditions and taints, then its pods.
func (p *Plan) node(h health, podsOf func(string) []*api.Pod, now time.Time, cfg Config, fullDisruption bool) {
	n := h.node
	taints := n.Spec.Taints
	var added, removed []string
	if h.ready != "" {
		var changed bool
		old := taints
		taints, changed = reconcileTaints(old, wantReadyTaints(h.ready, !fullDisruption), isReadyTaint, now)
		if changed {
			added, removed = taintDiff(old, taints)
		}
	}
	// A cordon's and the pressure conditions' taints change without an
	// event of the controller's, as in Kubernetes (the agent reports its
	// conditions; kubectl cordon says what it did).
	taints, cordoned := reconcileTaints(taints, wantConditionTaints(conditionTaintSet(n.Spec.Unschedulable, h.conditions)), isConditionTaint, now)
	taints, stamped := stampNoExecute(taints, now)
	if h.darkened || len(added)+len(removed) > 0 || cordoned || stamped {
		nn := n.DeepCopy()
		nn.Status.Conditions = h.conditions
		nn.Spec.Taints = taints
		var ev Event // none for a stamp or a cordon alone
		if h.darkened || len(added)+len(removed) > 0 {
			ev = nodeEvent(n.Name, h, added, removed, cfg)
		}
		p.Actions = append(p.Actions, Action{Type: UpdateNode, Object: nn, Event: ev})
	}
	noExecute := noExecuteTaints(taints, !fullDisruption)
	if h.ready != api.ConditionUnknown && len(noExecute) == 0 {
		return
	}
	pods := podsOf(n.Name)
	if h.ready == api.ConditionUnknown {
		for _, pod := range pods {
			if nr := markNotReady(pod, now); nr != nil {
				p.Actions = append(p.Actions, Action{Type: UpdatePod, Object: nr, Event: Event{
					Type: api.EventTypeWarning, Reason: ReasonNodeNotReady, Message: MessagePodNodeNotReady}})
			}
		}
	}
	if len(noExecute) == 0 {
		return
	}
	for _, pod := range pods {
		if !evictable(pod) {
			continue
		}
		at, taint, ok := podEvictionTime(pod, noExecute, cfg.EvictionTimeout)
		if !ok {
			continue
		}
		if now.Before(at) {
			p.wakeAt(at)
			continue
		}
		p.Actions = append(p.Actions, Action{Type: EvictPod, Object: pod, Taint: *taint, Event: Event{
			Type: api.EventTypeNormal, Reason: ReasonTaintManagerEviction,
			Message: fmt.Sprintf("Marking for deletion Pod %s/%s: node %s has taint %s:%s", pod.Namespace, pod.Name, n.Name, taint.Key, taint.Effect)}})
	}
}

// evictable: a pod the controller may delete. Mirror pods belong to their
// agent; pods already terminating or finished have nothing left to move.
func evictable(pod *api.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Annotations[api.AnnotationMirror] != "" {
		return false
	}
	return pod.Status.Phase != api.PodSucceeded && pod.Status.Phase != api.PodFailed
}

// markNotReady returns a copy of pod with its Ready and ContainersReady
// conditions False, or nil if neither is True, as Kubernetes'
// MarkPodsNotReady does, so that endpoints and DNS drop the pod at once.
func markNotReady(pod *api.Pod, now time.Time) *api.Pod {
	var out *api.Pod
	for i, c := range pod.Status.Conditions {
		if (c.Type != api.PodReady && c.Type != api.ContainersReady) || c.Status != api.ConditionTrue {
			continue
		}
		if out == nil {
			out = pod.DeepCopy()
		}
		oc := &out.Status.Conditions[i]
		oc.Status = api.ConditionFalse
		oc.Reason, oc.Message = ReasonNodeNotReady, MessagePodNodeNotReady
		oc.LastTransitionTime = metav1.NewTime(now)
	}
	return out
}

func nodeEvent(name string, h health, added, removed []string, cfg Config) Event {
	var b strings.Builder
	ev := Event{Type: api.EventTypeWarning}
	switch h.ready {
	case api.ConditionUnknown:
		ev.Reason = ReasonNodeUnreachable
		if h.darkened {
			fmt.Fprintf(&b, "Node %s: no heartbeat for more than %s, conditions set Unknown", name, cfg.GracePeriod)
		} else {
			fmt.Fprintf(&b, "Node %s is unreachable", name)
		}
	case api.ConditionFalse:
		ev.Reason = ReasonNodeNotReady
		fmt.Fprintf(&b, "Node %s reports Ready=False", name)
	default:
		ev.Type, ev.Reason = api.EventTypeNormal, ReasonNodeReady
		fmt.Fprintf(&b, "Node %s is Ready", name)
	}
	if len(added) > 0 {
		fmt.Fprintf(&b, "; tainted %s", strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		fmt.Fprintf(&b, "; removed taints %s", strings.Join(removed, ", "))
	}
	ev.Message = b.String()
	return ev
}

// taintDiff names the Ready condition's taints added and removed, as
// key:effect.
func taintDiff(old, cur []api.Taint) (added, removed []string) {
	for _, t := range cur {
		if isReadyTaint(t) && indexTaint(old, t) < 0 {
			added = append(added, t.Key+":"+string(t.Effect))
		}
	}
	for _, t := range old {
		if isReadyTaint(t) && indexTaint(cur, t) < 0 {
			removed = append(removed, t.Key+":"+string(t.Effect))
		}
	}
	return added, removed
}

func findCondition(cs []api.NodeCondition, t api.NodeConditionType) *api.NodeCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// nodeReady is a node's Ready status as posted, "" if none.
func nodeReady(n *api.Node) api.ConditionStatus {
	if c := findCondition(n.Status.Conditions, api.NodeReady); c != nil {
		return c.Status
	}
	return ""
}

// metaTime is t as a taint's timeAdded.
func metaTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

package sched

import "github.com/berth-dev/berth/api"

var (
	statusUnschedulable = newUnresolvable("NodeUnschedulable", ReasonUnschedulable)
	statusNodeName      = newUnresolvable("NodeName", ReasonNodeName)
	unschedulableTaint  = api.Taint{Key: api.TaintNodeUnschedulable, Effect: api.TaintEffectNoSchedule}
)

// nodeUnschedulable keeps pods off cordoned nodes (spec.unschedulable),
// except pods that tolerate node.kubernetes.io/unschedulable, as
// DaemonSet pods do in Kubernetes.
type nodeUnschedulable struct{}

func (nodeUnschedulable) Name() string { return "NodeUnschedulable" }

func (nodeUnschedulable) gate(*CycleState, *PodInfo) nodeFlags { return flagUnschedulable }

func (nodeUnschedulable) Filter(_ *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	if node.flags&flagUnschedulable == 0 || pod.toleratesTaint(&unschedulableTaint) {
		return nil
	}
	return statusUnschedulable
}

// nodeName honours a pod that names its node.
type nodeName struct{}

func (nodeName) Name() string { return "NodeName" }

func (nodeName) SkipFilter(_ *CycleState, pod *PodInfo) bool { return pod.Pod.Spec.NodeName == "" }

func (nodeName) Filter(_ *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	if node.name == pod.Pod.Spec.NodeName {
		return nil
	}
	return statusNodeName
}

// nodeConditions keeps pods off nodes that are not ready or are under
// pressure. Kubernetes does this through the taints its node lifecycle
// controller sets for the conditions, so a pod may tolerate them and the
// reason a user reads names the taint; NodeInfo derives the same taints
// from the conditions, so a node is avoided from the moment it reports
// them. Memory pressure turns away only BestEffort pods: the others are
// given a toleration for it, as Kubernetes gives it.
type nodeConditions struct{}

func (nodeConditions) Name() string { return "NodeConditions" }

func (nodeConditions) gate(*CycleState, *PodInfo) nodeFlags { return flagConditionTaints }

func (nodeConditions) Filter(_ *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	for i := range node.conditionTaints {
		if !pod.toleratesTaint(&node.conditionTaints[i].taint) {
			return node.conditionTaints[i].status
		}
	}
	return nil
}

func newConditionStatus(t api.Taint) *Status {
	return newUnresolvable("NodeConditions", UntoleratedTaintReason(t.Key, t.Value))
}

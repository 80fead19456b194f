package sched

import "github.com/berth-dev/berth/api"

// taintToleration keeps pods off nodes with NoSchedule or NoExecute taints
// they do not tolerate, and prefers nodes with fewer untolerated
// PreferNoSchedule taints.
type taintToleration struct{}

func (taintToleration) Name() string { return "TaintToleration" }

// gate serves both the filter and the score: a node without NoSchedule
// taints passes, and one without PreferNoSchedule taints scores 0 raw.
func (taintToleration) gate(*CycleState, *PodInfo) nodeFlags { return flagTaints | flagPreferTaints }

// Filter rejects the node for its first untolerated taint, in the node's
// order, as kube-scheduler does.
func (taintToleration) Filter(_ *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	for i := range node.taints {
		if !pod.toleratesTaint(&node.taints[i].taint) {
			return node.taints[i].status
		}
	}
	return nil
}

// Score counts the PreferNoSchedule taints the pod does not tolerate;
// Normalize turns the counts around so the fewest scores highest.
func (taintToleration) Score(_ *CycleState, pod *PodInfo, node *NodeInfo) int64 {
	var n int64
	for i := range node.preferTaints {
		if !pod.toleratesTaint(&node.preferTaints[i]) {
			n++
		}
	}
	return n
}

func (taintToleration) Normalize(_ *CycleState, _ *PodInfo, _ []*NodeInfo, scores []int64) {
	normalizeScores(scores, true)
}

func taintStatus(t api.Taint) *Status {
	return newUnresolvable("TaintToleration", UntoleratedTaintReason(t.Key, t.Value))
}

func (p *PodInfo) toleratesTaint(taint *api.Taint) bool {
	if p.toleratesMemoryPressure && taint.Key == TaintNodeMemoryPressure && taint.Effect == api.TaintEffectNoSchedule {
		return true
	}
	for i := range p.tolerations {
		if p.tolerations[i].ToleratesTaint(taint) {
			return true
		}
	}
	return false
}

// normalizeScores is kube-scheduler's DefaultNormalizeScore: scale so the
// highest raw score becomes MaxNodeScore, reversed for plugins whose raw
// score counts something bad.
func normalizeScores(scores []int64, reverse bool) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s)
	}
	if highest == 0 {
		if reverse {
			for i := range scores {
				scores[i] = MaxNodeScore
			}
		}
		return
	}
	sc := scale(highest)
	for i, s := range scores {
		s = percentOf(s, highest, sc)
		if reverse {
			s = MaxNodeScore - s
		}
		scores[i] = s
	}
}

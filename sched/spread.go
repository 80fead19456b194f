package sched

import "math"

// spreadMaxSkew and zoneMaxSkew are the maxSkew of kube-scheduler's system
// default spread constraints (ScheduleAnyway) on kubernetes.io/hostname
// and on topology.kubernetes.io/zone.
const (
	spreadMaxSkew = 3
	zoneMaxSkew   = 5
)

// podTopologySpread spreads the pods of one controller over nodes, and
// over zones once nodes have zone labels. It is kube-scheduler's
// PodTopologySpread scoring under its system defaults, with "pods of the
// same controller" as the default selector. Pods without a controller are
// not spread, as pods no workload selects are not there.
type podTopologySpread struct{}

func (podTopologySpread) Name() string { return "PodTopologySpread" }

// spreadScoreKey keeps what PreScore finds, a *spreadScoreState.
var spreadScoreKey = NewStateKey("PodTopologySpread/score")

// spreadScoreState is the cycle's counts of the pod's owner: its column
// in Nodes (pods by node index), and by zone once nodes have zones
// (zoneSeen is scratch for counting the zones of the nodes scored).
type spreadScoreState struct {
	column     []int32
	zoneCounts []int32
	zoneSeen   []bool
}

// SkipScore: a pod with constraints of its own is scored by its
// ScheduleAnyway ones alone (normalizeSpreadRules); one without is spread
// with its controller's other pods.
func (podTopologySpread) SkipScore(_ *CycleState, pod *PodInfo) bool {
	if pod.spreadRules != nil {
		return len(pod.spreadRules.soft) == 0
	}
	return pod.Owner == 0
}

// PreScore reads the owner's column and counts its pods by zone, for a
// pod spread by the default constraints.
func (podTopologySpread) PreScore(state *CycleState, pod *PodInfo, _ []*NodeInfo) {
	all := state.Nodes()
	if all == nil || pod.spreadRules != nil {
		return
	}
	st, _ := state.Reuse(spreadScoreKey).(*spreadScoreState)
	if st == nil {
		st = &spreadScoreState{}
	}
	st.column = all.ownerCounts(pod.Owner)
	// Zone counts only for a pod that is scored: one with node affinity
	// counts the nodes it accepts.
	st.zoneCounts = all.zoneCounts(pod, st.column, st.zoneCounts)
	if st.zoneCounts != nil {
		st.zoneSeen = append(st.zoneSeen[:0], make([]bool, len(st.zoneCounts))...)
	}
	state.Write(spreadScoreKey, st)
}

// Score counts the owner's running pods on the node, from the owner's
// column in Nodes; Normalize weighs the counts by the number of nodes
// scored.
func (podTopologySpread) Score(state *CycleState, _ *PodInfo, node *NodeInfo) int64 {
	st, _ := state.Read(spreadScoreKey).(*spreadScoreState)
	if st == nil {
		return 0
	}
	if i := int(node.index); i < len(st.column) {
		return int64(st.column[i])
	}
	return 0
}

func (podTopologySpread) scoreNodes(state *CycleState, _ *PodInfo, nodes []*NodeInfo, out []int64) {
	var col []int32
	if st, _ := state.Read(spreadScoreKey).(*spreadScoreState); st != nil {
		col = st.column
	}
	for k, n := range nodes {
		var c int64
		if i := int(n.index); i < len(col) {
			c = int64(col[i])
		}
		out[k] = c
	}
}

// Normalize computes kube-scheduler's score per node, count × log(nodes+2)
// + (maxSkew − 1) rounded (0 for a node without the hostname label), then
// maps the fewest pods to 100: 100 × (max + min − score) / max. The score
// grows with the count, so the extremes come from the extreme counts; and
// counts are small numbers repeated over hundreds of nodes, so each small
// count is weighed, rounded and mapped once. Once nodes have zones, the
// zone's term joins each score (normalizeZones).
func (podTopologySpread) Normalize(state *CycleState, pod *PodInfo, nodes []*NodeInfo, scores []int64) {
	if pod.spreadRules != nil {
		normalizeSpreadRules(state, pod, nodes, scores)
		return
	}
	if st, _ := state.Read(spreadScoreKey).(*spreadScoreState); st != nil && st.zoneCounts != nil {
		normalizeZones(st, nodes, scores)
		return
	}
	const unlabelled = -1
	minCount, maxCount := int64(math.MaxInt64), int64(unlabelled)
	anyUnlabelled := false
	for j, node := range nodes {
		if node.flags&flagHostname == 0 {
			scores[j], anyUnlabelled = unlabelled, true
			continue
		}
		minCount, maxCount = min(minCount, scores[j]), max(maxCount, scores[j])
	}
	if maxCount == unlabelled {
		for j := range scores {
			scores[j] = MaxNodeScore
		}
		return
	}
	weight := math.Log(float64(len(nodes) + 2))
	raw := func(count int64) int64 {
		if count == unlabelled {
			return 0
		}
		return int64(math.Round(float64(count)*weight + float64(spreadMaxSkew-1)))
	}
	highest, lowest := raw(maxCount), raw(minCount)
	if anyUnlabelled {
		lowest = 0
	}
	sc := scale(highest)
	var mapped [64]int64 // normalised score + 1 by count, 0 until computed
	for j, c := range scores {
		if c >= 0 && c < int64(len(mapped)) && mapped[c] != 0 {
			scores[j] = mapped[c] - 1
			continue
		}
		s := percentOf(highest+lowest-raw(c), highest, sc)
		if c >= 0 && c < int64(len(mapped)) {
			mapped[c] = s + 1
		}
		scores[j] = s
	}
}

// normalizeZones is Normalize with the zone constraint beside the
// hostname one, as kube-scheduler scores them: a node's raw score is the
// sum, over the constraints whose label it has, of the count of the
// owner's pods in its domain × log(domains + 2) + (maxSkew − 1), rounded.
// The hostname constraint has a domain per node scored; the zone
// constraint as many as the distinct zones of the nodes scored, nodes
// without one (or with an empty one) counting as one more. Counts in a
// zone are of the pods on the nodes the pod's node affinity accepts
// (Nodes.zoneCounts). Then 100 × (max + min − score) / max, all 100 when
// every score is 0.
func normalizeZones(st *spreadScoreState, nodes []*NodeInfo, scores []int64) {
	seen := st.zoneSeen // all false: PreScore sizes it for the cycle
	zones := 0
	for _, n := range nodes {
		if !seen[n.zone] {
			seen[n.zone] = true
			zones++
		}
	}
	hostWeight := math.Log(float64(len(nodes) + 2))
	zoneWeight := math.Log(float64(zones + 2))
	lowest, highest := int64(math.MaxInt64), int64(0)
	for j, n := range nodes {
		var raw float64
		if n.flags&flagHostname != 0 {
			raw += float64(scores[j])*hostWeight + float64(spreadMaxSkew-1)
		}
		if n.flags&flagZone != 0 {
			raw += float64(st.zoneCounts[n.zone])*zoneWeight + float64(zoneMaxSkew-1)
		}
		scores[j] = int64(math.Round(raw))
		lowest, highest = min(lowest, scores[j]), max(highest, scores[j])
	}
	if highest == 0 {
		for j := range scores {
			scores[j] = MaxNodeScore
		}
		return
	}
	sc := scale(highest)
	for j, s := range scores {
		scores[j] = percentOf(highest+lowest-s, highest, sc)
	}
}

package sched

import "math"

// balancedAllocation prefers the node whose cpu and memory would be used
// in the most similar proportions, so that neither runs out while the
// other idles: 100 × (1 − the standard deviation of the used fractions),
// which for two resources is |cpu − memory| / 2. It scores with the pods'
// real requests, and skips pods that request neither, as kube-scheduler
// does (issue kubernetes#129138: they would all pile on one node).
type balancedAllocation struct{}

func (balancedAllocation) Name() string { return "NodeResourcesBalancedAllocation" }

func (balancedAllocation) SkipScore(_ *CycleState, pod *PodInfo) bool {
	return pod.Requests.MilliCPU == 0 && pod.Requests.Memory == 0
}

func (balancedAllocation) Score(_ *CycleState, pod *PodInfo, node *NodeInfo) int64 {
	cpu, mem := node.Requested.MilliCPU+pod.Requests.MilliCPU, node.Requested.Memory+pod.Requests.Memory
	if s, ok := node.memo.balanced.get(cpu, mem); ok {
		return s
	}
	return computeBalanced(node, cpu, mem)
}

func computeBalanced(node *NodeInfo, cpu, mem int64) int64 {
	var fractions [2]float64
	n := 0
	if c := node.Allocatable.MilliCPU; c != 0 {
		fractions[n] = min(float64(cpu)/float64(c), 1)
		n++
	}
	if c := node.Allocatable.Memory; c != 0 {
		fractions[n] = min(float64(mem)/float64(c), 1)
		n++
	}
	var std float64
	if n == 2 {
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	}
	score := int64((1 - std) * float64(MaxNodeScore))
	node.memo.balanced.set(cpu, mem, score)
	return score
}

func (balancedAllocation) scoreNodes(_ *CycleState, pod *PodInfo, nodes []*NodeInfo, out []int64) {
	for k, n := range nodes {
		cpu, mem := n.Requested.MilliCPU+pod.Requests.MilliCPU, n.Requested.Memory+pod.Requests.Memory
		if s, ok := n.memo.balanced.get(cpu, mem); ok {
			out[k] = s
			continue
		}
		out[k] = computeBalanced(n, cpu, mem)
	}
}

package sched

// Bits of the resources a node lacks for a pod; fitStatuses holds the
// status for each combination, so a rejection allocates nothing.
const (
	lackPods = 1 << iota
	lackCPU
	lackMemory
	lackEphemeral
)

var fitStatuses = func() (s [16]*Status) {
	for mask := 1; mask < len(s); mask++ {
		var reasons []string
		for _, r := range []struct {
			bit    int
			reason string
		}{
			{lackPods, ReasonTooManyPods},
			{lackCPU, ReasonInsufficientCPU},
			{lackMemory, ReasonInsufficientMemory},
			{lackEphemeral, ReasonInsufficientEphemeral},
		} {
			if mask&r.bit != 0 {
				reasons = append(reasons, r.reason)
			}
		}
		s[mask] = NewStatus("NodeResourcesFit", reasons...)
	}
	return s
}()

// resourcesFit rejects nodes whose allocatable, less what the pods there
// request, cannot hold the pod's requests. Every resource that falls short
// is a reason, as kube-scheduler reports them all.
type resourcesFit struct{}

func (resourcesFit) Name() string { return "NodeResourcesFit" }

// Filter checks kube-scheduler's conditions: one more pod than allowed,
// or a positive request above what is left (a request of 0 always fits,
// even on an over-committed node: request > max(left, 0)). Kept small
// enough for the compiler to inline it into filterNodes.
func (resourcesFit) Filter(_ *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	a, used, req := &node.Allocatable, &node.Requested, &pod.Requests
	var lack int
	if used.Pods >= a.Pods {
		lack = lackPods
	}
	if req.MilliCPU > max(a.MilliCPU-used.MilliCPU, 0) {
		lack |= lackCPU
	}
	if req.Memory > max(a.Memory-used.Memory, 0) {
		lack |= lackMemory
	}
	if req.EphemeralStorage > max(a.EphemeralStorage-used.EphemeralStorage, 0) {
		lack |= lackEphemeral
	}
	return fitStatuses[lack]
}

func (r resourcesFit) filterNodes(_ *CycleState, pod *PodInfo, nodes []*NodeInfo, status []*Status) {
	for k, n := range nodes {
		if status[k] == nil {
			status[k] = r.Filter(nil, pod, n)
		}
	}
}

// resourcesScore is NodeResourcesFit's score: LeastAllocated by default,
// MostAllocated for bin packing.
func resourcesScore(most bool) ScorePlugin {
	if most {
		return mostAllocated{}
	}
	return leastAllocated{}
}

// leastAllocated prefers the node that would have the most cpu and memory
// left, each weighted 1, counting the scoring defaults for pods without
// requests.
type leastAllocated struct{}

func (leastAllocated) Name() string { return "NodeResourcesFit" }

func (leastAllocated) Score(_ *CycleState, pod *PodInfo, node *NodeInfo) int64 {
	return allocationScore(pod, node, false)
}

func (leastAllocated) scoreNodes(_ *CycleState, pod *PodInfo, nodes []*NodeInfo, out []int64) {
	scoreAllocations(pod, nodes, out, false)
}

// mostAllocated prefers the node that would be fullest, so that whole
// nodes stay free.
type mostAllocated struct{}

func (mostAllocated) Name() string { return "NodeResourcesFit" }

func (mostAllocated) Score(_ *CycleState, pod *PodInfo, node *NodeInfo) int64 {
	return allocationScore(pod, node, true)
}

func (mostAllocated) scoreNodes(_ *CycleState, pod *PodInfo, nodes []*NodeInfo, out []int64) {
	scoreAllocations(pod, nodes, out, true)
}

// scoreAllocations is allocationScore over many nodes, with the memo
// looked up in the loop and the arithmetic called only on a miss.
func scoreAllocations(pod *PodInfo, nodes []*NodeInfo, out []int64, most bool) {
	for k, n := range nodes {
		cpu, mem := n.NonZeroCPU+pod.NonZeroCPU, n.NonZeroMemory+pod.NonZeroMemory
		if s, ok := n.memo.allocation.get(cpu, mem); ok && n.memo.most == most {
			out[k] = s
			continue
		}
		out[k] = computeAllocation(n, cpu, mem, most)
	}
}

// scoreMemo holds a node's last allocation scores with their inputs (the
// node's sums plus the pod's requests; allocatable is fixed until setNode
// clears the memo). Scoring is pure, so equal inputs give equal scores.
type scoreMemo struct {
	allocation, balanced memoEntry
	most                 bool // allocation is MostAllocated's
}

type memoEntry struct {
	cpu, memory, score int64
	valid              bool
}

func (e *memoEntry) get(cpu, memory int64) (int64, bool) {
	return e.score, e.valid && e.cpu == cpu && e.memory == memory
}

func (e *memoEntry) set(cpu, memory, score int64) {
	*e = memoEntry{cpu: cpu, memory: memory, score: score, valid: true}
}

// allocationScore averages the per-resource score over cpu and memory,
// leaving out a resource the node has none of, as kube-scheduler does.
func allocationScore(pod *PodInfo, node *NodeInfo, most bool) int64 {
	cpu, mem := node.NonZeroCPU+pod.NonZeroCPU, node.NonZeroMemory+pod.NonZeroMemory
	if s, ok := node.memo.allocation.get(cpu, mem); ok && node.memo.most == most {
		return s
	}
	return computeAllocation(node, cpu, mem, most)
}

func computeAllocation(node *NodeInfo, cpu, mem int64, most bool) int64 {
	var sum, n int64
	if c := node.Allocatable.MilliCPU; c != 0 {
		sum += requestedScore(cpu, c, node.cpuScale, most)
		n++
	}
	if c := node.Allocatable.Memory; c != 0 {
		sum += requestedScore(mem, c, node.memoryScale, most)
		n++
	}
	if n > 0 {
		sum /= n
	}
	node.memo.allocation.set(cpu, mem, sum)
	node.memo.most = most
	return sum
}

// requestedScore is kube-scheduler's leastRequestedScore,
// (capacity - requested) * 100 / capacity and 0 when over-committed, or
// its mostRequestedScore, requested * 100 / capacity capped at 100 (the
// scoring defaults can exceed capacity).
func requestedScore(requested, capacity int64, scale float64, most bool) int64 {
	var free int64
	switch {
	case most:
		free = min(requested, capacity)
	case requested > capacity:
		return 0
	default:
		free = capacity - requested
	}
	return percentOf(free, capacity, scale)
}

// percentOf is x * 100 / capacity rounded down, exactly as the integer
// division, without its cost (scale is 100/capacity): the product in
// floating point is off by at most one, which the integer check corrects.
// x * 100 stays well inside float64's exact integers for any real node.
func percentOf(x, capacity int64, scale float64) int64 {
	num := x * MaxNodeScore
	q := int64(float64(x) * scale)
	if q*capacity > num {
		q--
	} else if (q+1)*capacity <= num {
		q++
	}
	return q
}

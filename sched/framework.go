package sched

import (
	"errors"
	"math/rand/v2"
)

// MaxNodeScore is the highest score a score plugin gives a node.
const MaxNodeScore int64 = 100

// FilterPlugin rejects the nodes a pod cannot run on. Filter returns nil
// for a node that passes, else a Status whose reasons are constants, so a
// user can be told why each node was rejected. state is the attempt's
// CycleState, where the plugin's PreFilter left what it found.
type FilterPlugin interface {
	Name() string
	Filter(state *CycleState, pod *PodInfo, node *NodeInfo) *Status
}

// PreFilterPlugin is a filter that computes something once per attempt,
// over every node of the cycle (state.Nodes()), before any node is
// filtered, and keeps it in state under its own key. Outside a cycle
// (Framework.Filter) state.Nodes() is nil and the plugin's Filter must
// decide from the node alone. An error ends the attempt; a
// *PodUnschedulableError makes it unschedulable with its message.
type PreFilterPlugin interface {
	PreFilter(state *CycleState, pod *PodInfo) error
}

// ScorePlugin ranks the nodes that passed the filters, 0 to MaxNodeScore
// (after normalising, for plugins that normalise).
type ScorePlugin interface {
	Name() string
	Score(state *CycleState, pod *PodInfo, node *NodeInfo) int64
}

// PreScorePlugin is a score plugin that computes something once per
// attempt, after filtering and before any node is scored, over the nodes
// that passed, and keeps it in state under its own key.
type PreScorePlugin interface {
	PreScore(state *CycleState, pod *PodInfo, nodes []*NodeInfo)
}

// ScoreNormalizer is a score plugin whose raw scores only mean something
// relative to each other (counts of taints, of pods, of preference
// weights); Normalize maps them onto 0..MaxNodeScore over the nodes being
// scored, in place.
type ScoreNormalizer interface {
	Normalize(state *CycleState, pod *PodInfo, nodes []*NodeInfo, scores []int64)
}

// FilterSkipper is a filter that cannot reject some pods anywhere, as
// kube-scheduler's PreFilter returns Skip: the framework leaves it out of
// the per-node loop for such a pod, which keeps the common pod's cycle
// short. It is asked after every PreFilter has run.
type FilterSkipper interface {
	SkipFilter(state *CycleState, pod *PodInfo) bool
}

// ScoreSkipper is a score plugin that would give every node the same
// score for some pods, as kube-scheduler's PreScore returns Skip.
type ScoreSkipper interface {
	SkipScore(state *CycleState, pod *PodInfo) bool
}

// gated is implemented by the built-in plugins that can only reject a node
// (or score it other than 0) when it has one of some features: gate
// returns those node flags for the pod, 0 if any node may be concerned.
// The framework then skips the call for every other node, which on a large
// cluster is most of them.
type gated interface {
	gate(state *CycleState, pod *PodInfo) nodeFlags
}

// batchFilter is implemented by the built-in filters that look at every
// node: one call checks a run of nodes, in a loop the compiler keeps tight,
// instead of one interface call per node. It sets the status of each node
// it rejects among those no earlier filter rejected, and must agree with
// Filter node by node.
type batchFilter interface {
	filterNodes(state *CycleState, pod *PodInfo, nodes []*NodeInfo, status []*Status)
}

// batchScorer is implemented by the built-in score plugins that run on
// every feasible node: one call scores them all in a loop the compiler
// keeps tight, instead of one interface call per node. It must give what
// Score gives node by node.
type batchScorer interface {
	scoreNodes(state *CycleState, pod *PodInfo, nodes []*NodeInfo, out []int64)
}

// FrameworkOptions tune the scheduling core. The zero value is
// kube-scheduler's default profile.
type FrameworkOptions struct {
	// Seed makes tie-breaking deterministic.
	Seed int64
	// MostAllocated scores nodes by how full they would be (bin packing)
	// instead of how empty (spreading).
	MostAllocated bool
	// Volumes filters nodes by where a pod's volumes can be used; nil
	// constrains nothing.
	Volumes VolumeFilter
	// PercentageOfNodesToScore overrides the adaptive sample size; 0 means
	// kube-scheduler's adaptive rule.
	PercentageOfNodesToScore int32
}

// Framework is the pure scheduling core: a chain of filter plugins and a
// weighted sum of score plugins over Nodes, with no I/O and no clock. It keeps buffers and a rotating start between calls, so it is
// not safe for concurrent use: one scheduling loop owns it.
type Framework struct {
	filters    []FilterPlugin
	preFilters []PreFilterPlugin
	scores     []weightedScore
	percentage int32
	rng        *rand.Rand
	// next is where the next cycle starts looking, so successive pods are
	// tried against different nodes first and load spreads over a large
	// cluster even though only a sample is scored.
	next int

	activeFilters []activeFilter
	activeScores  []weightedScore
	chunk         [filterChunk]*NodeInfo
	status        [filterChunk]*Status
	feasible      []*NodeInfo
	failed        []*Status
	raw, sum      []int64
	// state is the attempt's CycleState, made anew (keeping its buffers)
	// for each attempt.
	state CycleState
}

// filterChunk is how many nodes are filtered together: enough to keep the
// per-node loops tight, few enough that the work past the last node needed
// is small.
const filterChunk = 64

type weightedScore struct {
	plugin     ScorePlugin
	normalizer ScoreNormalizer
	weight     int64
	gate       nodeFlags
}

type activeFilter struct {
	plugin FilterPlugin
	batch  batchFilter
	gate   nodeFlags
}

// NewFramework wires the default plugins, one line each: filters in
// kube-scheduler's order (the first to reject a node gives the reason) and
// scores with kube-scheduler's default weights.
func NewFramework(opts FrameworkOptions) *Framework {
	f := &Framework{
		percentage: opts.PercentageOfNodesToScore,
		rng:        rand.New(rand.NewPCG(uint64(opts.Seed), 0x6265727468)),
	}
	f.AddFilter(nodeUnschedulable{})
	f.AddFilter(nodeName{})
	f.AddFilter(nodeConditions{})
	f.AddFilter(taintToleration{})
	f.AddFilter(nodeAffinity{})
	f.AddFilter(nodePorts{})
	f.AddFilter(resourcesFit{})
	f.AddFilter(volumeBinding{hook: opts.Volumes})
	f.AddFilter(podTopologySpreadFilter{})
	f.AddFilter(interPodAffinity{})

	f.AddScore(taintToleration{}, 3)
	f.AddScore(nodeAffinity{}, 2)
	f.AddScore(resourcesScore(opts.MostAllocated), 1)
	f.AddScore(podTopologySpread{}, 2)
	f.AddScore(interPodScore{}, 2)
	f.AddScore(balancedAllocation{}, 1)
	return f
}

// AddFilter appends a filter to the chain, and its PreFilter if it has
// one.
func (f *Framework) AddFilter(p FilterPlugin) {
	f.filters = append(f.filters, p)
	if pre, ok := p.(PreFilterPlugin); ok {
		f.preFilters = append(f.preFilters, pre)
	}
}

// AddScore adds a score plugin with a weight.
func (f *Framework) AddScore(p ScorePlugin, weight int64) {
	n, _ := p.(ScoreNormalizer)
	f.scores = append(f.scores, weightedScore{plugin: p, normalizer: n, weight: weight})
}

// Result is where a pod goes and how much of the cluster was looked at.
type Result struct {
	// Node is the chosen node.
	Node string
	// Feasible is how many nodes passed the filters (and were scored).
	Feasible int
	// Evaluated is how many nodes were filtered.
	Evaluated int
	// Preemption is, for a pod no node could take, where preempting
	// pods of lower priority would make room (set by the scheduler's
	// cache, not by Schedule).
	Preemption Preemption
}

// Schedule chooses a node for pod among all's nodes. It filters nodes from a
// rotating offset until it has found as many feasible ones as the sampling
// rule asks for, scores those, and picks the best, breaking ties with the
// seeded generator. When no node passes, the error is a *FitError that
// counts the reasons over all nodes; other errors (from the volume hook)
// mean the attempt could not be made.
func (f *Framework) Schedule(pod *PodInfo, all *Nodes) (Result, error) {
	nodes := all.list
	n := len(nodes)
	if n == 0 {
		return Result{}, &FitError{}
	}
	state, err := f.begin(pod, all)
	defer f.end()
	if err != nil {
		var pre *PodUnschedulableError
		if errors.As(err, &pre) {
			return Result{}, &FitError{NumAllNodes: n, PreFilterMsg: pre.Message}
		}
		return Result{}, err
	}
	want := NumFeasibleNodesToFind(f.percentage, n)
	feasible, failed := f.feasible[:0], f.failed[:0]
	start := f.next
	if start >= n {
		start = 0
	}
	// Nodes are filtered a chunk at a time; the nodes of the last chunk
	// past the one that completes the sample are not counted, so the
	// outcome is that of filtering one node at a time.
	evaluated := 0
	for evaluated < n && len(feasible) < want {
		m := min(filterChunk, n-evaluated)
		chunk, status := f.chunk[:m], f.status[:m]
		for c := range chunk {
			i := start + evaluated + c
			if i >= n {
				i -= n
			}
			chunk[c] = nodes[i]
		}
		clear(status)
		f.filterChunk(state, pod, chunk, status)
		for c, node := range chunk {
			evaluated++
			if status[c] != nil {
				failed = append(failed, status[c])
				continue
			}
			feasible = append(feasible, node)
			if len(feasible) == want {
				break
			}
		}
	}
	clear(f.chunk[:])
	f.next = (start + evaluated) % n
	f.feasible, f.failed = feasible, failed
	res := Result{Feasible: len(feasible), Evaluated: evaluated}
	switch len(feasible) {
	case 0:
		// Every node was evaluated and failed, from start on: the
		// statuses are put in the list's order for preemption.
		fe := newFitError(n, failed)
		fe.statuses = make([]*Status, n)
		for i, st := range failed {
			fe.statuses[(start+i)%n] = st
		}
		return res, fe
	case 1:
		// As kube-scheduler does: with one candidate, scores change nothing.
		res.Node = feasible[0].name
		return res, nil
	}
	res.Node = f.selectHost(feasible, f.score(state, pod, feasible))
	return res, nil
}

// begin starts an attempt for pod over all: a fresh CycleState, the
// PreFilter plugins' state in it (kube-scheduler's PreFilter), and the
// plugins that have something to say about the pod. Every begin is
// followed by an end.
func (f *Framework) begin(pod *PodInfo, all *Nodes) (*CycleState, error) {
	if all != nil && pod.readsPlacedPods() {
		all.countPodLabels()
	}
	state := &f.state
	state.reset(all)
	for _, p := range f.preFilters {
		if err := p.PreFilter(state, pod); err != nil {
			return state, err
		}
	}
	f.prepare(state, pod)
	return state, nil
}

// end closes the attempt: the state lets go of what it found, which
// neither the cache nor the next attempt may see, and keeps its buffers.
func (f *Framework) end() { f.state.reset(nil) }

// Explain runs the filters for pod on every node of all, as a scheduling
// cycle would, and returns each node's status (nil where it passes), in
// the order of all.List().
func (f *Framework) Explain(pod *PodInfo, all *Nodes) ([]*Status, error) {
	state, err := f.begin(pod, all)
	defer f.end()
	if err != nil {
		return nil, err
	}
	out := make([]*Status, len(all.list))
	for i, n := range all.list {
		out[i] = f.filter(state, pod, n)
	}
	return out, nil
}

// prepare chooses the plugins that have something to say about the pod,
// once its PreFilters have run.
func (f *Framework) prepare(state *CycleState, pod *PodInfo) {
	f.activeFilters = f.activeFilters[:0]
	for _, p := range f.filters {
		if s, ok := p.(FilterSkipper); ok && s.SkipFilter(state, pod) {
			continue
		}
		a := activeFilter{plugin: p}
		if g, ok := p.(gated); ok {
			a.gate = g.gate(state, pod)
		}
		if b, ok := p.(batchFilter); ok && a.gate == 0 {
			a.batch = b
		}
		f.activeFilters = append(f.activeFilters, a)
	}
	f.activeScores = f.activeScores[:0]
	for _, ws := range f.scores {
		if s, ok := ws.plugin.(ScoreSkipper); ok && s.SkipScore(state, pod) {
			continue
		}
		ws.gate = 0
		if g, ok := ws.plugin.(gated); ok {
			ws.gate = g.gate(state, pod)
		}
		f.activeScores = append(f.activeScores, ws)
	}
}

// filterChunk runs the active filters over a run of nodes, in order: each
// node keeps the status of the first filter that rejects it. A gated filter
// is called only for the nodes with the features it looks at.
func (f *Framework) filterChunk(state *CycleState, pod *PodInfo, nodes []*NodeInfo, status []*Status) {
	var flags nodeFlags // what any node of the chunk has
	for _, node := range nodes {
		flags |= node.flags
	}
	for i := range f.activeFilters {
		a := &f.activeFilters[i]
		switch {
		case a.batch != nil:
			a.batch.filterNodes(state, pod, nodes, status)
			continue
		case a.gate != 0 && flags&a.gate == 0:
			continue
		}
		for k, node := range nodes {
			if status[k] == nil && (a.gate == 0 || node.flags&a.gate != 0) {
				status[k] = a.plugin.Filter(state, pod, node)
			}
		}
	}
}

// filter runs the active filters on one node in order, as filterChunk
// does for many.
func (f *Framework) filter(state *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	for i := range f.activeFilters {
		a := &f.activeFilters[i]
		if a.gate != 0 && node.flags&a.gate == 0 {
			continue
		}
		if st := a.plugin.Filter(state, pod, node); st != nil {
			return st
		}
	}
	return nil
}

// Filter runs every filter on one node, outside a cycle, and returns the
// first rejection; tests and explanations use it to ask why a node was or
// was not chosen.
func (f *Framework) Filter(pod *PodInfo, node *NodeInfo) *Status {
	state, err := f.begin(pod, nil)
	defer f.end()
	if err != nil {
		return NewStatus("VolumeBinding", err.Error())
	}
	return f.filter(state, pod, node)
}

// score runs each active score plugin over the feasible nodes, normalises
// its scores and returns the weighted sum per node.
func (f *Framework) score(state *CycleState, pod *PodInfo, nodes []*NodeInfo) []int64 {
	m := len(nodes)
	if cap(f.sum) < m {
		f.sum, f.raw = make([]int64, m), make([]int64, m)
	}
	total, raw := f.sum[:m], f.raw[:m]
	clear(total)
	for _, ws := range f.activeScores {
		if p, ok := ws.plugin.(PreScorePlugin); ok {
			p.PreScore(state, pod, nodes)
		}
	}
	for _, ws := range f.activeScores {
		if bs, ok := ws.plugin.(batchScorer); ok {
			bs.scoreNodes(state, pod, nodes, raw)
		} else {
			for k, node := range nodes {
				raw[k] = 0
				if ws.gate == 0 || node.flags&ws.gate != 0 {
					raw[k] = ws.plugin.Score(state, pod, node)
				}
			}
		}
		if ws.normalizer != nil {
			ws.normalizer.Normalize(state, pod, nodes, raw)
		}
		w, total := ws.weight, total[:len(raw)]
		for k, s := range raw {
			total[k] += s * w
		}
	}
	return total
}

// selectHost picks the highest total; among equal totals each is picked
// with equal probability, as kube-scheduler's reservoir sampling picks
// them, so identical nodes share the load. Counting the ties first takes
// one random number per pod instead of one per tie.
func (f *Framework) selectHost(nodes []*NodeInfo, total []int64) string {
	best, ties := total[0], 0
	for _, s := range total {
		switch {
		case s > best:
			best, ties = s, 1
		case s == best:
			ties++
		}
	}
	pick := 0
	if ties > 1 {
		pick = f.rng.IntN(ties)
	}
	j := 0
	for ; ; j++ {
		if total[j] == best {
			if pick == 0 {
				break
			}
			pick--
		}
	}
	return nodes[j].name
}

// Sampling bounds, kube-scheduler's: never score fewer than 100 nodes nor
// less than 5% of the cluster.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// NumFeasibleNodesToFind is how many feasible nodes a cycle looks for
// before it stops filtering: all of a cluster under 100 nodes; above, the
// percentage given, or kube-scheduler's adaptive 50% - nodes/125 (at least
// 5%), and never fewer than 100.
func NumFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind || percentage >= 100 {
		return numAllNodes
	}
	if percentage <= 0 {
		percentage = 50 - int32(numAllNodes/125)
		if percentage < minFeasibleNodesPercentageToFind {
			percentage = minFeasibleNodesPercentageToFind
		}
	}
	num := numAllNodes * int(percentage) / 100
	if num < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return num
}

// The optional interfaces each built-in plugin implements, checked when
// the package compiles: a plugin whose method no longer matches would
// otherwise drop out of its gate, skip, batch or pre-pass silently.
var (
	_ gated           = nodeUnschedulable{}
	_ gated           = nodeConditions{}
	_ gated           = nodePorts{}
	_ gated           = taintToleration{}
	_ gated           = interPodAffinity{}
	_ FilterSkipper   = nodeName{}
	_ FilterSkipper   = nodeAffinity{}
	_ FilterSkipper   = nodePorts{}
	_ FilterSkipper   = volumeBinding{}
	_ FilterSkipper   = podTopologySpreadFilter{}
	_ PreFilterPlugin = volumeBinding{}
	_ PreFilterPlugin = podTopologySpreadFilter{}
	_ PreFilterPlugin = interPodAffinity{}
	_ batchFilter     = nodeAffinity{}
	_ batchFilter     = resourcesFit{}
	_ ScoreSkipper    = nodeAffinity{}
	_ ScoreSkipper    = balancedAllocation{}
	_ ScoreSkipper    = podTopologySpread{}
	_ ScoreSkipper    = interPodScore{}
	_ PreScorePlugin  = podTopologySpread{}
	_ PreScorePlugin  = interPodScore{}
	_ ScoreNormalizer = nodeAffinity{}
	_ ScoreNormalizer = taintToleration{}
	_ ScoreNormalizer = podTopologySpread{}
	_ ScoreNormalizer = interPodScore{}
	_ batchScorer     = leastAllocated{}
	_ batchScorer     = mostAllocated{}
	_ batchScorer     = balancedAllocation{}
	_ batchScorer     = podTopologySpread{}
	_ batchScorer     = interPodScore{}
)

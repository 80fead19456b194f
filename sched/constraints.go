package sched

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/berth-dev/berth/api"
)

var (
	statusSpread      = NewStatus("PodTopologySpread", ReasonTopologySpread)
	statusSpreadLabel = newUnresolvable("PodTopologySpread", ReasonTopologySpreadLabel)
)

// spreadConstraint is a compiled topologySpreadConstraint, with
// Kubernetes' defaults filled in: minDomains 1, nodeAffinityPolicy Honor,
// nodeTaintsPolicy Ignore.
type spreadConstraint struct {
	maxSkew     int64
	topologyKey string
	selector    labels.Selector
	// countsNone: the selector is empty ({}), which kube-scheduler counts
	// as matching no placed pod (though the pod itself matches it).
	countsNone bool
	// self: the pod matches its own selector, so placing it adds one.
	self          bool
	minDomains    int
	honorAffinity bool
	honorTaints   bool
	// required are labels every pod the selector selects in the pod's
	// namespace has (see affinityTerm.required); exact: the selector is
	// the one label of required.
	required []podLabel
	exact    bool
	// setKey is the selector's selectorKey, for the Nodes' count of the
	// pods it selects (podCount).
	setKey string
}

// spreadRules are a pod's own constraints: DoNotSchedule ones filter,
// ScheduleAnyway ones score. A pod with any replaces the system default
// spreading.
type spreadRules struct {
	hard, soft []spreadConstraint
}

// compileSpreadRules compiles the pod's topologySpreadConstraints; nil
// for none. matchLabelKeys add the pod's values of those labels to the
// selector, as the API server merges them at creation.
func compileSpreadRules(pod *api.Pod) *spreadRules {
	cs := pod.Spec.TopologySpreadConstraints
	if len(cs) == 0 {
		return nil
	}
	r := &spreadRules{}
	for i := range cs {
		c := &cs[i]
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			sel = labels.Nothing()
		} else if c.LabelSelector != nil {
			sel = mergeLabelKeys(sel, pod.Labels, c.MatchLabelKeys, selection.In)
		}
		sc := spreadConstraint{
			maxSkew:       int64(c.MaxSkew),
			topologyKey:   c.TopologyKey,
			selector:      sel,
			countsNone:    sel.Empty(),
			self:          sel.Matches(labels.Set(pod.Labels)),
			minDomains:    1,
			honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
			honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
		}
		sc.required, sc.exact = requiredLabels(sel, pod.Namespace)
		sc.setKey = selectorKey(sel)
		if c.MinDomains != nil {
			sc.minDomains = int(*c.MinDomains)
		}
		switch c.WhenUnsatisfiable {
		case corev1.ScheduleAnyway:
			r.soft = append(r.soft, sc)
		default:
			r.hard = append(r.hard, sc)
		}
	}
	return r
}

// includes is kube-scheduler's node inclusion policy: whether the pods
// on node count for the constraint.
func (c *spreadConstraint) includes(pod *PodInfo, node *NodeInfo) bool {
	if c.honorAffinity && !pod.nodeSelector.matches(node) {
		return false
	}
	if c.honorTaints {
		for i := range node.taints {
			if !pod.toleratesTaint(&node.taints[i].taint) {
				return false
			}
		}
	}
	return true
}

// count is how many pods on node the constraint selects: of the pod's
// namespace, not terminating.
func (c *spreadConstraint) count(namespace string, node *NodeInfo) int64 {
	if c.countsNone {
		return 0
	}
	if node.labelsCounted {
		for _, l := range c.required {
			if node.labelPods[l] == 0 {
				return 0
			}
		}
		if c.exact && node.terminating == 0 {
			return int64(node.labelPods[c.required[0]])
		}
	}
	var n int64
	for _, p := range node.pods {
		if p.Terminating || p.Namespace != namespace {
			continue
		}
		if c.selector.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// everywhere reports whether c counts the pods on every listed node for
// pod: its inclusion policies leave none out, and every listed node has
// the topology key of each of cs (a node without one is left out). Such
// a constraint reads the Nodes' counts per domain (podCount) rather than
// every node's pods.
func (c *spreadConstraint) everywhere(pod *PodInfo, all *Nodes, cs []spreadConstraint) bool {
	if c.honorTaints || (c.honorAffinity && !pod.nodeSelector.empty()) {
		return false
	}
	for i := range cs {
		if !all.everyNodeHas(cs[i].topologyKey) {
			return false
		}
	}
	return true
}

// hasAllKeys reports whether node has the topology label of every
// constraint.
func hasAllKeys(node *NodeInfo, cs []spreadConstraint) bool {
	for i := range cs {
		if _, ok := node.labels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

// spreadCounts are one DoNotSchedule constraint's counts for a cycle:
// the pods it selects per domain, over the nodes that have every such
// constraint's label and that its inclusion policies admit.
type spreadCounts struct {
	counts  map[string]int64
	minimum int64
	// domains is how many domains there are, for minDomains.
	domains int
	// perNode: the topology key is kubernetes.io/hostname, whose value
	// is the node's own name, so each node is a domain of its own. counts
	// stays empty: the filter counts the one node it looks at, and only
	// the minimum is kept.
	perNode bool
	// indexed: the counts come from the Nodes' (countedSpread), counts
	// then being theirs, not to be changed; counted is the Nodes' count
	// of the pods the constraint selects, nil for a selector that counts
	// none.
	indexed bool
	counted *podCount
}

// spreadCounts is kube-scheduler's PodTopologySpread PreFilter. For a
// constraint by hostname it keeps the minimum alone, and once every
// constraint is by hostname, needs no domain count (minDomains 1) and has
// found a node with none of its pods, it stops: no node can do better, so
// a pod spread by hostname over many nodes reads a few of them, not all.
//
// A constraint whose pods the Nodes count (spreadConstraint.counted)
// reads the counts per domain instead, as does one that counts no pod:
// no node is read.
func (ns *Nodes) spreadCounts(pod *PodInfo, out []spreadCounts) []spreadCounts {
	hard := pod.spreadRules.hard
	reuse := out[:cap(out)]
	out = out[:0]
	early, walk := true, false
	for i := range hard {
		c := &hard[i]
		st := spreadCounts{minimum: math.MaxInt32, perNode: c.topologyKey == api.LabelHostname}
		if c.everywhere(pod, ns, hard) {
			out = append(out, ns.countedSpread(pod, c, st))
			continue
		}
		walk = true
		if i < len(reuse) && reuse[i].counts != nil && !reuse[i].indexed {
			st.counts = reuse[i].counts
			clear(st.counts)
		} else {
			st.counts = map[string]int64{}
		}
		out = append(out, st)
		early = early && st.perNode && c.minDomains <= 1
	}
	if !walk {
		return out
	}
	for _, n := range ns.list {
		if !hasAllKeys(n, hard) {
			continue
		}
		zero := true
		for i := range hard {
			c, st := &hard[i], &out[i]
			if st.indexed {
				continue
			}
			if !c.includes(pod, n) {
				zero = false
				continue
			}
			if st.perNode {
				k := c.count(pod.Namespace, n)
				st.minimum = min(st.minimum, k)
				st.domains++
				zero = zero && st.minimum == 0
				continue
			}
			st.counts[n.labels[c.topologyKey]] += c.count(pod.Namespace, n)
		}
		if early && zero {
			break
		}
	}
	for i := range out {
		if out[i].perNode || out[i].indexed {
			continue
		}
		out[i].domains = len(out[i].counts)
		for _, c := range out[i].counts {
			out[i].minimum = min(out[i].minimum, c)
		}
	}
	return out
}

// countedSpread fills st, the counts of a constraint that counts on
// every listed node, from the Nodes' counts: the domains are the
// topology key's values on the listed nodes.
func (ns *Nodes) countedSpread(pod *PodInfo, c *spreadConstraint, st spreadCounts) spreadCounts {
	st.indexed = true
	if _, st.domains = ns.keyCount(c.topologyKey); st.domains == 0 {
		return st
	}
	if c.countsNone {
		st.minimum = 0
		return st
	}
	pc := ns.podCount(pod.Namespace, c.selector, c.setKey, false)
	st.counted = pc
	if st.perNode {
		st.minimum = pc.hostMinimum(ns.hostNodes)
		return st
	}
	st.counts = pc.key(ns, c.topologyKey)
	if len(st.counts) < st.domains {
		st.minimum = 0 // a domain holds none
		return st
	}
	for _, k := range st.counts {
		st.minimum = min(st.minimum, k)
	}
	return st
}

// domainCount is the pods c selects in node's domain, from the cycle's
// counts st.
func (st *spreadCounts) domainCount(pod *PodInfo, c *spreadConstraint, node *NodeInfo, value string) int64 {
	if st.counted != nil && st.perNode {
		return st.counted.at(node)
	}
	if !st.perNode {
		return st.counts[value]
	}
	if !hasAllKeys(node, pod.spreadRules.hard) || !c.includes(pod, node) {
		return 0 // not counted, as the PreFilter would not have
	}
	return c.count(pod.Namespace, node)
}

// podTopologySpreadFilter is kube-scheduler's PodTopologySpread filter: a
// node without a DoNotSchedule constraint's topology label is turned
// away, and so is one where placing the pod would make its domain's count
// exceed the smallest domain's by more than maxSkew (the smallest counts
// as 0 while there are fewer domains than minDomains).
type podTopologySpreadFilter struct{}

func (podTopologySpreadFilter) Name() string { return "PodTopologySpread" }

// spreadFilterKey keeps the cycle's counts for the pod's DoNotSchedule
// constraints, a *spreadFilterState.
var spreadFilterKey = NewStateKey("PodTopologySpread/filter")

// spreadFilterState holds one spreadCounts per DoNotSchedule constraint,
// in the order of the pod's spreadRules.hard.
type spreadFilterState struct{ counts []spreadCounts }

// PreFilter counts the pods each DoNotSchedule constraint selects per
// domain, once for the cycle. Outside a cycle nothing is counted and the
// filter checks the topology labels alone.
func (podTopologySpreadFilter) PreFilter(state *CycleState, pod *PodInfo) error {
	all := state.Nodes()
	if all == nil || pod.spreadRules == nil || len(pod.spreadRules.hard) == 0 {
		return nil
	}
	st, _ := state.Reuse(spreadFilterKey).(*spreadFilterState)
	if st == nil {
		st = &spreadFilterState{}
	}
	st.counts = all.spreadCounts(pod, st.counts)
	state.Write(spreadFilterKey, st)
	return nil
}

func (podTopologySpreadFilter) SkipFilter(_ *CycleState, pod *PodInfo) bool {
	return pod.spreadRules == nil || len(pod.spreadRules.hard) == 0
}

func (podTopologySpreadFilter) Filter(state *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	var counts []spreadCounts
	if st, _ := state.Read(spreadFilterKey).(*spreadFilterState); st != nil {
		counts = st.counts
	}
	for i := range pod.spreadRules.hard {
		c := &pod.spreadRules.hard[i]
		var st *spreadCounts
		if i < len(counts) {
			st = &counts[i]
		}
		var value string
		if st != nil && st.perNode && st.counted != nil {
			// The count is the node's: its hostname is not read.
			if node.flags&flagHostname == 0 {
				return statusSpreadLabel
			}
		} else {
			v, ok := node.labels[c.topologyKey]
			if !ok {
				return statusSpreadLabel
			}
			value = v
		}
		if st == nil {
			continue // no cycle state: a single-node explanation
		}
		minimum := st.minimum
		if st.domains < c.minDomains {
			minimum = 0
		}
		var self int64
		if c.self {
			self = 1
		}
		if st.domainCount(pod, c, node, value)+self-minimum > c.maxSkew {
			return statusSpread
		}
	}
	return nil
}

// normalizeSpreadRules is kube-scheduler's PodTopologySpread scoring of
// a pod's own ScheduleAnyway constraints: nodes without every such
// constraint's label score 0; the others sum, per constraint, the pods
// it selects in their domain (counted over every node its inclusion
// policies admit; on the node itself for kubernetes.io/hostname) ×
// log(domains among the nodes scored + 2) + maxSkew − 1, rounded; then
// the fewest pods map to 100 as for the default constraints.
func normalizeSpreadRules(state *CycleState, pod *PodInfo, nodes []*NodeInfo, scores []int64) {
	soft := pod.spreadRules.soft
	const ignored = -1
	domains := make([]map[string]int64, len(soft))
	sizes := make([]int, len(soft))
	counted := 0
	for j, n := range nodes {
		if !hasAllKeys(n, soft) {
			scores[j] = ignored
			continue
		}
		scores[j] = 0
		counted++
		for i := range soft {
			if soft[i].topologyKey == api.LabelHostname {
				continue
			}
			if domains[i] == nil {
				domains[i] = map[string]int64{}
			}
			v := n.labels[soft[i].topologyKey]
			if _, ok := domains[i][v]; !ok {
				domains[i][v] = 0
				sizes[i]++
			}
		}
	}
	weights := make([]float64, len(soft))
	for i := range soft {
		size := sizes[i]
		if soft[i].topologyKey == api.LabelHostname {
			size = counted
		}
		weights[i] = math.Log(float64(size + 2))
	}
	// A constraint that counts on every listed node reads the Nodes'
	// counts of its pods; the others count them over every node.
	indexed := make([]*podCount, len(soft))
	walk := false
	if all := state.Nodes(); all != nil {
		for i := range soft {
			c := &soft[i]
			switch {
			case !c.everywhere(pod, all, soft):
				walk = walk || c.topologyKey != api.LabelHostname
			case c.countsNone:
			default:
				indexed[i] = all.podCount(pod.Namespace, c.selector, c.setKey, false)
				if c.topologyKey == api.LabelHostname {
					continue
				}
				values := indexed[i].key(all, c.topologyKey)
				for v := range domains[i] {
					domains[i][v] = values[v]
				}
			}
		}
	}
	if all := state.Nodes(); all != nil && walk {
		for _, n := range all.list {
			if !hasAllKeys(n, soft) {
				continue
			}
			for i := range soft {
				c := &soft[i]
				if c.topologyKey == api.LabelHostname || indexed[i] != nil || !c.includes(pod, n) {
					continue
				}
				v := n.labels[c.topologyKey]
				if cnt, ok := domains[i][v]; ok {
					domains[i][v] = cnt + c.count(pod.Namespace, n)
				}
			}
		}
	}
	lowest, highest := int64(math.MaxInt64), int64(0)
	for j, n := range nodes {
		if scores[j] == ignored {
			continue
		}
		var raw float64
		for i := range soft {
			c := &soft[i]
			var cnt int64
			switch {
			case c.topologyKey == api.LabelHostname && indexed[i] != nil:
				cnt = indexed[i].at(n)
			case c.topologyKey == api.LabelHostname:
				cnt = c.count(pod.Namespace, n)
			default:
				cnt = domains[i][n.labels[c.topologyKey]]
			}
			raw += float64(cnt)*weights[i] + float64(c.maxSkew-1)
		}
		scores[j] = int64(math.Round(raw))
		lowest, highest = min(lowest, scores[j]), max(highest, scores[j])
	}
	for j, s := range scores {
		switch {
		case s == ignored:
			scores[j] = 0
		case highest == 0:
			scores[j] = MaxNodeScore
		default:
			scores[j] = MaxNodeScore * (highest + lowest - s) / highest
		}
	}
}

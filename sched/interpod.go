package sched

import (
	"fmt"
	"math"

	"github.com/berth-dev/berth/api"
)

// hardPodAffinityWeight is what a placed pod's required affinity term
// that selects the pod adds to the score of the nodes in its domain:
// kube-scheduler's default (hardPodAffinityWeight: 1).
const hardPodAffinityWeight = 1

// topologyPair is one topology domain: a node label and its value.
type topologyPair struct{ key, value string }

// weightedTerm is a preferred pod (anti-)affinity term.
type weightedTerm struct {
	affinityTerm
	weight int64
}

// interPodTerms are a pod's inter-pod affinity terms other than its
// required anti-affinity (podFacts.antiAffinity): placed pods keep them,
// as the pods scheduled after them read them.
type interPodTerms struct {
	affinity          []affinityTerm
	preferredAffinity []weightedTerm
	preferredAnti     []weightedTerm
}

// scores says whether the terms count in the scores of pods scheduled
// after their pod is placed.
func (t *interPodTerms) scores() bool {
	return t != nil && len(t.affinity)+len(t.preferredAffinity)+len(t.preferredAnti) > 0
}

// compileInterPodTerms compiles the pod's required affinity and its
// preferred affinity and anti-affinity; nil when it has none.
func compileInterPodTerms(pod *api.Pod) *interPodTerms {
	a := pod.Spec.Affinity
	if a == nil || (a.PodAffinity == nil && a.PodAntiAffinity == nil) {
		return nil
	}
	out := &interPodTerms{}
	if pa := a.PodAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			out.affinity = append(out.affinity, compileAffinityTerm(pod, fromCoreTerm(&pa.RequiredDuringSchedulingIgnoredDuringExecution[i])))
		}
		for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			out.preferredAffinity = append(out.preferredAffinity, weightedTerm{compileAffinityTerm(pod, fromCoreTerm(&w.PodAffinityTerm)), int64(w.Weight)})
		}
	}
	if paa := a.PodAntiAffinity; paa != nil {
		for _, w := range paa.PreferredDuringSchedulingIgnoredDuringExecution {
			out.preferredAnti = append(out.preferredAnti, weightedTerm{compileAffinityTerm(pod, fromCoreTerm(&w.PodAffinityTerm)), int64(w.Weight)})
		}
	}
	if len(out.affinity)+len(out.preferredAffinity)+len(out.preferredAnti) == 0 {
		return nil
	}
	return out
}

// interPodState is what kube-scheduler's InterPodAffinity PreFilter finds
// once per cycle over every node, for the terms by other keys than the
// hostname (and for required affinity, by any key): how many pods each
// domain holds that the pod's affinity terms all select, that each of
// its anti-affinity terms selects, and the domains whose placed pods'
// anti-affinity terms select the pod.
type interPodState struct {
	affinityCounts map[topologyPair]int64
	antiCounts     map[topologyPair]int64
	existingAnti   map[topologyPair]int64
}

// interPodState computes the cycle's state for pod, nil when the pod and
// the placed pods' terms that select it need nothing beyond the node
// itself (the common case, and the fast path).
func (ns *Nodes) interPodState(pod *PodInfo, antiMatched []antiMatch) *interPodState {
	var farAnti []*affinityTerm
	for i := range pod.antiAffinity {
		if pod.antiAffinity[i].topologyKey != api.LabelHostname {
			farAnti = append(farAnti, &pod.antiAffinity[i])
		}
	}
	var farMatched []antiMatch
	for _, m := range antiMatched {
		if m.topologyKey != api.LabelHostname {
			farMatched = append(farMatched, m)
		}
	}
	if len(pod.affinity) == 0 && len(farAnti) == 0 && len(farMatched) == 0 {
		return nil
	}
	st := &interPodState{}
	if len(pod.affinity) > 0 || len(farAnti) > 0 {
		st.affinityCounts, st.antiCounts = map[topologyPair]int64{}, map[topologyPair]int64{}
		for _, n := range ns.list {
			if len(n.pods) == 0 {
				continue
			}
			// Label counts rule most nodes out without reading their pods.
			aff := len(pod.affinity) > 0 && !anyRuledOut(pod.affinity, n)
			anti := false
			for _, t := range farAnti {
				anti = anti || !t.ruledOut(n)
			}
			if !aff && !anti {
				continue
			}
			for _, other := range n.pods {
				if aff && matchesAllTerms(pod.affinity, &other.podFacts, ns.namespaces) {
					for i := range pod.affinity {
						countPair(st.affinityCounts, n, pod.affinity[i].topologyKey, 1)
					}
				}
				for _, t := range farAnti {
					if t.matches(&other.podFacts, ns.namespaces) {
						countPair(st.antiCounts, n, t.topologyKey, 1)
					}
				}
			}
		}
	}
	if len(farMatched) > 0 {
		st.existingAnti = map[topologyPair]int64{}
		for _, n := range ns.list {
			if n.flags&flagAntiPods == 0 {
				continue
			}
			for _, m := range farMatched {
				if c := n.antiTermPods[m.key]; c > 0 {
					countPair(st.existingAnti, n, m.topologyKey, int64(c))
				}
			}
		}
	}
	return st
}

// anyRuledOut reports whether the node's label counts show that one of
// the terms selects no pod there.
func anyRuledOut(terms []affinityTerm, n *NodeInfo) bool {
	for i := range terms {
		if terms[i].ruledOut(n) {
			return true
		}
	}
	return false
}

// countPair adds d to the count of n's domain by key, if n has the label.
func countPair(m map[topologyPair]int64, n *NodeInfo, key string, d int64) {
	if v, ok := n.labels[key]; ok {
		m[topologyPair{key, v}] += d
	}
}

// interPodScore is kube-scheduler's InterPodAffinity scoring: a node's
// raw score sums, over the domains it is in, the weights of the pod's
// preferred affinity terms that select pods there, less those of its
// preferred anti-affinity terms; plus, for each placed pod there whose
// terms select the pod, the weight of its preferred affinity terms (and
// hardPodAffinityWeight for its required ones), less that of its
// preferred anti-affinity terms. Normalised min to 0, max to 100.
type interPodScore struct{}

func (interPodScore) Name() string { return "InterPodAffinity" }

// interPodScoreKey keeps the scores per domain PreScore finds, a
// *domainScores.
var interPodScoreKey = NewStateKey("InterPodAffinity/score")

// SkipScore: nothing scores unless the pod has preferred terms or a
// placed pod has terms that score.
func (interPodScore) SkipScore(state *CycleState, pod *PodInfo) bool {
	if pod.interPodTerms != nil && len(pod.interPodTerms.preferredAffinity)+len(pod.interPodTerms.preferredAnti) > 0 {
		return false
	}
	all := state.Nodes()
	return all == nil || all.scoringPods == 0
}

// PreScore finds the scores per domain once, for the nodes that passed
// the filters; Score reads each node's.
func (interPodScore) PreScore(state *CycleState, pod *PodInfo, _ []*NodeInfo) {
	if all := state.Nodes(); all != nil {
		if d := all.interPodScores(pod); d != nil {
			state.Write(interPodScoreKey, d)
		}
	}
}

func (p interPodScore) scoreNodes(state *CycleState, pod *PodInfo, nodes []*NodeInfo, out []int64) {
	for k, n := range nodes {
		out[k] = p.Score(state, pod, n)
	}
}

func (interPodScore) Score(state *CycleState, _ *PodInfo, node *NodeInfo) int64 {
	d, _ := state.Read(interPodScoreKey).(*domainScores)
	if d == nil {
		return 0
	}
	var s int64
	if i := int(node.index); i < len(d.host) && node.flags&flagHostname != 0 {
		s = d.host[i]
	}
	for key, values := range d.other {
		if v, ok := node.labels[key]; ok {
			s += values[v]
		}
	}
	for i := range d.counted {
		t := &d.counted[i]
		if t.values == nil {
			if node.flags&flagHostname != 0 {
				s += t.weight * t.counter.at(node)
			}
		} else if v, ok := node.labels[t.key]; ok {
			s += t.weight * t.values[v]
		}
	}
	return s
}

// domainScores are the InterPodAffinity scores per domain: by node index
// for kubernetes.io/hostname (a node's hostname is its own), by key and
// value for the other keys.
type domainScores struct {
	host    []int64
	other   map[string]map[string]int64
	counted []countedTerm
	any     bool
}

// countedTerm is a term whose pods are counted per node and domain (a
// domainCounter): a node's score adds the weight times the count in its
// domain, read when the node is scored.
type countedTerm struct {
	weight int64
	key    string
	// values are the counts by value of key, nil for the hostname.
	values  map[string]int64
	counter *domainCounter
}

// addCounted adds the term of weight over the pods dc counts by key.
func (d *domainScores) addCounted(ns *Nodes, dc *domainCounter, key string, weight int64) {
	if weight == 0 {
		return
	}
	t := countedTerm{weight: weight, key: key, counter: dc}
	if key == api.LabelHostname {
		if dc.hostsWith == 0 {
			return
		}
	} else if t.values = dc.key(ns, key); len(t.values) == 0 {
		return
	}
	d.counted = append(d.counted, t)
	d.any = true
}

func (d *domainScores) add(n *NodeInfo, key string, w int64) {
	if w == 0 {
		return
	}
	if key == api.LabelHostname {
		if n.flags&flagHostname != 0 {
			d.host[n.index] += w
			d.any = true
		}
		return
	}
	v, ok := n.labels[key]
	if !ok {
		return
	}
	m := d.other[key]
	if m == nil {
		if d.other == nil {
			d.other = map[string]map[string]int64{}
		}
		m = map[string]int64{}
		d.other[key] = m
	}
	m[v] += w
	d.any = true
}

func (interPodScore) Normalize(_ *CycleState, _ *PodInfo, _ []*NodeInfo, scores []int64) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lo, hi = min(lo, s), max(hi, s)
	}
	diff := hi - lo
	for i, s := range scores {
		if diff <= 0 {
			scores[i] = 0
			continue
		}
		scores[i] = int64(float64(MaxNodeScore) * (float64(s-lo) / float64(diff)))
	}
}

// interPodScores computes kube-scheduler's InterPodAffinity PreScore:
// the score per domain, nil when there is nothing to score. Unless the
// pod has preferred terms, only the placed pods' terms that score are
// read.
func (ns *Nodes) interPodScores(pod *PodInfo) *domainScores {
	var own *interPodTerms
	if pod.interPodTerms != nil && len(pod.interPodTerms.preferredAffinity)+len(pod.interPodTerms.preferredAnti) > 0 {
		own = pod.interPodTerms
	}
	if own == nil && ns.scoringPods == 0 {
		return nil
	}
	d := &domainScores{}
	if own != nil {
		// A term of the pod's own namespace reads the counts of the pods
		// its selector selects; one of other namespaces counts them on
		// every node.
		var walk []weightedTerm
		for _, side := range []struct {
			terms []weightedTerm
			sign  int64
		}{{own.preferredAffinity, 1}, {own.preferredAnti, -1}} {
			terms, sign := side.terms, side.sign
			for i := range terms {
				t := &terms[i]
				if t.setKey == "" {
					walk = append(walk, weightedTerm{t.affinityTerm, sign * t.weight})
					continue
				}
				pc := ns.podCount(t.namespaces[0], t.selector, t.setKey, true)
				d.addCounted(ns, &pc.domainCounter, t.topologyKey, sign*t.weight)
			}
		}
		if len(walk) > 0 {
			d.host = append(ns.hostScores[:0], make([]int64, ns.slots)...)
			ns.hostScores = d.host
		}
		for _, n := range ns.list {
			if len(walk) == 0 {
				break
			}
			if len(n.labels) == 0 || len(n.pods) == 0 {
				continue
			}
			for i := range walk {
				t := &walk[i]
				d.add(n, t.topologyKey, t.weight*t.count(n, ns.namespaces))
			}
		}
	}
	// The placed pods' terms that score are few distinct ones, each
	// matched once against the pod, each counting its pods per node and
	// domain.
	for _, pt := range ns.scoreTerms {
		if pt.term.matches(&pod.podFacts, ns.namespaces) {
			d.addCounted(ns, &pt.domainCounter, pt.term.topologyKey, pt.weight)
		}
	}
	// With no term that adds to a domain every node would score alike:
	// the plugin is skipped.
	if !d.any {
		return nil
	}
	return d
}

// count is how many of node's pods the term selects, from the node's
// label counts alone when they tell.
func (t *affinityTerm) count(n *NodeInfo, ns map[string]map[string]string) int64 {
	if t.ruledOut(n) {
		return 0
	}
	if t.exact && n.labelsCounted {
		return int64(n.labelPods[t.required[0]])
	}
	var c int64
	for _, other := range n.pods {
		if t.matches(&other.podFacts, ns) {
			c++
		}
	}
	return c
}

// placedScoreTerm is one distinct term of placed pods that scores: its
// signed weight (the preferred term's weight, negative for
// anti-affinity; hardPodAffinityWeight for a required affinity term),
// how many pods hold it, and how many on each node and in each domain.
type placedScoreTerm struct {
	domainCounter
	term   affinityTerm
	weight int64
	pods   int
}

// eachScoreTerm calls fn with the key, signed weight and term of each of
// the pod's terms that score in other pods' cycles.
func (t *interPodTerms) eachScoreTerm(fn func(key string, weight int64, term *affinityTerm)) {
	if t == nil {
		return
	}
	for i := range t.affinity {
		fn(fmt.Sprint("r\x00", hardPodAffinityWeight, t.affinity[i].key), hardPodAffinityWeight, &t.affinity[i])
	}
	for i := range t.preferredAffinity {
		w := &t.preferredAffinity[i]
		fn(fmt.Sprint("p\x00", w.weight, w.key), w.weight, &w.affinityTerm)
	}
	for i := range t.preferredAnti {
		w := &t.preferredAnti[i]
		fn(fmt.Sprint("a\x00", w.weight, w.key), -w.weight, &w.affinityTerm)
	}
}

// countScoreTerms adds d to the counts of p's scoring terms on n.
func (ns *Nodes) countScoreTerms(p *placedPod, n *NodeInfo, d int32) {
	p.interPodTerms.eachScoreTerm(func(key string, weight int64, term *affinityTerm) {
		pt := ns.scoreTerms[key]
		if pt == nil {
			if d < 0 {
				return
			}
			if ns.scoreTerms == nil {
				ns.scoreTerms = map[string]*placedScoreTerm{}
			}
			pt = &placedScoreTerm{term: *term, weight: weight}
			ns.scoreTerms[key] = pt
		}
		pt.add(ns, n, d)
		if pt.pods += int(d); pt.pods <= 0 {
			delete(ns.scoreTerms, key)
		}
	})
}

package sched

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/berth-dev/berth/api"
)

var (
	statusAffinity             = newUnresolvable("InterPodAffinity", ReasonAffinity)
	statusAntiAffinity         = NewStatus("InterPodAffinity", ReasonAntiAffinity)
	statusExistingAntiAffinity = NewStatus("InterPodAffinity", ReasonExistingAntiAffinity)
)

// affinityTerm is a compiled pod affinity or anti-affinity term: it
// selects the pods in its namespaces (or in those its namespaceSelector
// selects) whose labels match its selector, and its topology key says
// what a domain is: the nodes that share the key's value.
type affinityTerm struct {
	selector   labels.Selector
	namespaces []string
	// nsSelector selects further namespaces by their labels; nil when the
	// term has no namespaceSelector.
	nsSelector  labels.Selector
	topologyKey string
	// key names the term by what it says (namespaces, topology key,
	// selector): the terms of the pods of one controller share it, so the
	// pods already placed hold few distinct terms (see Nodes.antiTerms).
	key string
	// required are labels (with the one namespace) every pod the term
	// selects has: a node with no pod of one of them has none the term
	// selects. Empty when the term names several namespaces or requires
	// no single label value.
	required []podLabel
	// exact: the selector is required's one label and nothing else, so a
	// node with a pod of that label has a pod the term selects.
	exact bool
	// setKey is the selectorKey of a term of one namespace and no
	// namespaceSelector, whose pods the Nodes count per domain
	// (podCount); empty for the others.
	setKey string
}

// ruledOut reports whether no pod on the node can match the term, from
// the node's label counts alone.
func (t *affinityTerm) ruledOut(node *NodeInfo) bool {
	if !node.labelsCounted {
		return false
	}
	for _, l := range t.required {
		if node.labelPods[l] == 0 {
			return true
		}
	}
	return false
}

// requiredLabels are the key=value pairs sel requires (=, == and In of
// one value), in namespace ns.
func requiredLabels(sel labels.Selector, ns string) (required []podLabel, exact bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil, false
	}
	var out []podLabel
	for _, r := range reqs {
		vals, op := r.Values(), r.Operator()
		if (op == selection.Equals || op == selection.DoubleEquals || op == selection.In) && vals.Len() == 1 {
			out = append(out, podLabel{ns, r.Key(), vals.UnsortedList()[0]})
		}
	}
	return out, len(reqs) == 1 && len(out) == 1
}

// matches reports whether the term selects the pod p: p is in one of
// its namespaces, or in one its namespaceSelector selects (by the labels
// in ns), and its labels match. It is kube-scheduler's AffinityTerm.Matches.
func (t *affinityTerm) matches(p *podFacts, ns map[string]map[string]string) bool {
	if !contains(t.namespaces, p.Namespace) && (t.nsSelector == nil || !t.nsSelector.Matches(labels.Set(ns[p.Namespace]))) {
		return false
	}
	return t.selector.Matches(labels.Set(p.Labels))
}

// compileAntiAffinity compiles the pod's required anti-affinity terms.
func compileAntiAffinity(pod *api.Pod) []affinityTerm {
	a := pod.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return nil
	}
	var out []affinityTerm
	for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		out = append(out, compileAffinityTerm(pod, podAffinityTerm{
			selector: t.LabelSelector, namespaces: t.Namespaces, nsSelector: t.NamespaceSelector,
			topologyKey: t.TopologyKey, matchKeys: t.MatchLabelKeys, mismatchKeys: t.MismatchLabelKeys,
		}))
	}
	return out
}

// podAffinityTerm is the part of a pod affinity term the scheduler reads,
// from berth's type or Kubernetes' alike.
type podAffinityTerm struct {
	selector, nsSelector    *metav1.LabelSelector
	namespaces              []string
	topologyKey             string
	matchKeys, mismatchKeys []string
}

func fromCoreTerm(t *corev1.PodAffinityTerm) podAffinityTerm {
	return podAffinityTerm{
		selector: t.LabelSelector, namespaces: t.Namespaces, nsSelector: t.NamespaceSelector,
		topologyKey: t.TopologyKey, matchKeys: t.MatchLabelKeys, mismatchKeys: t.MismatchLabelKeys,
	}
}

// compileAffinityTerm compiles one term of pod, as kube-scheduler does: a
// term without a selector (or with one Kubernetes would not parse)
// matches no pod; one with neither namespaces nor a namespaceSelector
// means the pod's own namespace. matchLabelKeys and mismatchLabelKeys
// add the pod's values of those labels to the selector (In and NotIn),
// as the API server merges them at creation.
func compileAffinityTerm(pod *api.Pod, t podAffinityTerm) affinityTerm {
	sel, err := metav1.LabelSelectorAsSelector(t.selector)
	if err != nil {
		sel = labels.Nothing()
	}
	if t.selector != nil && err == nil {
		sel = mergeLabelKeys(sel, pod.Labels, t.matchKeys, selection.In)
		sel = mergeLabelKeys(sel, pod.Labels, t.mismatchKeys, selection.NotIn)
	}
	ns := t.namespaces
	if len(ns) == 0 && t.nsSelector == nil {
		ns = []string{pod.Namespace}
	}
	term := affinityTerm{selector: sel, namespaces: ns, topologyKey: t.topologyKey}
	nsKey := ""
	if t.nsSelector != nil {
		nsSel, err := metav1.LabelSelectorAsSelector(t.nsSelector)
		if err != nil {
			nsSel = labels.Nothing()
		}
		term.nsSelector, nsKey = nsSel, fmt.Sprintf("%T\x00%s", nsSel, nsSel.String())
	}
	term.key = termKey(sel, ns, t.topologyKey) + "\x00" + nsKey
	if len(ns) == 1 && term.nsSelector == nil {
		term.required, term.exact = requiredLabels(sel, ns[0])
		term.setKey = selectorKey(sel)
	}
	return term
}

// mergeLabelKeys adds to sel, for each key the pod has a label of, the
// requirement key op (value).
func mergeLabelKeys(sel labels.Selector, podLabels map[string]string, keys []string, op selection.Operator) labels.Selector {
	for _, k := range keys {
		v, ok := podLabels[k]
		if !ok {
			continue
		}
		r, err := labels.NewRequirement(k, op, []string{v})
		if err != nil {
			continue
		}
		sel = sel.Add(*r)
	}
	return sel
}

// termKey is an affinityTerm's key. A selector's String is canonical
// (sorted requirements); its type tells the selector that matches nothing
// from the one that matches everything, which print alike.
func termKey(sel labels.Selector, namespaces []string, topologyKey string) string {
	ns := slices.Clone(namespaces)
	slices.Sort(ns)
	return fmt.Sprintf("%T\x00%s\x00%s\x00%s", sel, strings.Join(ns, ","), topologyKey, sel.String())
}

// antiMatch is a term of pods already placed that selects the pod being
// scheduled: a node holding a pod with it turns the pod away.
type antiMatch struct{ key, topologyKey string }

// interPodAffinity is kube-scheduler's InterPodAffinity filter: the pod
// goes only where each of its required affinity terms finds a pod in the
// node's domain, nowhere its required anti-affinity terms find one, and
// nowhere a placed pod's required anti-affinity terms select it from the
// same domain. A node without a term's topology label is in no domain:
// an affinity term turns it away, an anti-affinity term does not apply
// there, as in Kubernetes.
//
// Terms by kubernetes.io/hostname are checked on the node itself (a
// node's hostname is its own); terms by any other key read the counts
// per domain found once for the cycle (interPodState).
type interPodAffinity struct{}

func (interPodAffinity) Name() string { return "InterPodAffinity" }

// gate: a pod without terms of its own, that no placed pod's term by
// another key than the hostname repels, can only be turned away by pods
// with anti-affinity already on the node.
func (interPodAffinity) gate(state *CycleState, pod *PodInfo) nodeFlags {
	if len(pod.antiAffinity) > 0 || len(pod.affinity) > 0 {
		return 0
	}
	if c, _ := state.Read(interPodFilterKey).(*interPodCycle); c != nil && c.counts != nil && len(c.counts.existingAnti) > 0 {
		return 0
	}
	return flagAntiPods
}

// interPodFilterKey keeps what PreFilter finds, an *interPodCycle.
var interPodFilterKey = NewStateKey("InterPodAffinity/filter")

// interPodCycle is the filter's state for a cycle: the terms of placed
// pods that select the pod (see Nodes.antiTermsMatching) and the counts
// per domain for the terms by other keys than the hostname (nil when the
// node alone decides).
type interPodCycle struct {
	antiMatched []antiMatch
	counts      *interPodState
}

// PreFilter finds, once for the cycle, the placed pods' terms that select
// the pod and the counts per domain, as kube-scheduler's PreFilter does.
// Outside a cycle nothing is found and Filter reads the node's own pods.
func (interPodAffinity) PreFilter(state *CycleState, pod *PodInfo) error {
	all := state.Nodes()
	if all == nil {
		return nil
	}
	c, _ := state.Reuse(interPodFilterKey).(*interPodCycle)
	if c == nil {
		c = &interPodCycle{}
	}
	c.antiMatched = all.antiTermsMatching(pod, c.antiMatched[:0])
	c.counts = all.interPodState(pod, c.antiMatched)
	state.Write(interPodFilterKey, c)
	return nil
}

func (interPodAffinity) Filter(state *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	cycle, _ := state.Read(interPodFilterKey).(*interPodCycle)
	var st *interPodState
	if cycle != nil {
		st = cycle.counts
	}
	nsLabels := state.namespaces()
	if len(pod.affinity) > 0 && !satisfiesAffinity(pod, st, node, nsLabels) {
		return statusAffinity
	}
	for i := range pod.antiAffinity {
		t := &pod.antiAffinity[i]
		value, ok := node.labels[t.topologyKey]
		if !ok {
			continue
		}
		if t.topologyKey != api.LabelHostname && st != nil {
			if st.antiCounts[topologyPair{t.topologyKey, value}] > 0 {
				return statusAntiAffinity
			}
			continue
		}
		if t.ruledOut(node) {
			continue
		}
		if t.exact && node.labelsCounted {
			// Not ruled out: a pod here has the one label the term
			// requires, which is all it selects.
			return statusAntiAffinity
		}
		for _, other := range node.pods {
			if t.matches(&other.podFacts, nsLabels) {
				return statusAntiAffinity
			}
		}
	}
	if st != nil && len(st.existingAnti) > 0 {
		for pair := range st.existingAnti {
			if node.labels[pair.key] == pair.value {
				if _, ok := node.labels[pair.key]; ok {
					return statusExistingAntiAffinity
				}
			}
		}
	}
	if cycle != nil {
		// The terms of placed pods that select this pod were found once
		// for the cycle (Nodes.antiTermsMatching), as kube-scheduler's
		// PreFilter does: a node only needs to say whether it holds one.
		for _, m := range cycle.antiMatched {
			if node.antiTermPods[m.key] == 0 {
				continue
			}
			if _, ok := node.labels[m.topologyKey]; ok {
				return statusExistingAntiAffinity
			}
		}
		return nil
	}
	for _, other := range node.antiPods {
		for i := range other.antiAffinity {
			t := &other.antiAffinity[i]
			if _, ok := node.labels[t.topologyKey]; !ok {
				continue
			}
			if t.matches(&pod.podFacts, nsLabels) {
				return statusExistingAntiAffinity
			}
		}
	}
	return nil
}

// satisfiesAffinity is kube-scheduler's satisfyPodAffinity: the node has
// every term's topology label, and each term's domain holds a pod that
// all the terms select; or no pod anywhere matches them and the pod
// matches its own terms, so that the first of a group that wants to be
// together can be placed. Without the cycle's counts (a single-node
// explanation) the node's own pods are the domain.
func satisfiesAffinity(pod *PodInfo, st *interPodState, node *NodeInfo, ns map[string]map[string]string) bool {
	exist := true
	for i := range pod.affinity {
		t := &pod.affinity[i]
		value, ok := node.labels[t.topologyKey]
		if !ok {
			return false
		}
		if st != nil {
			if st.affinityCounts[topologyPair{t.topologyKey, value}] <= 0 {
				exist = false
			}
			continue
		}
		if !nodeHasAllMatching(pod, node, ns) {
			exist = false
		}
	}
	if exist {
		return true
	}
	none := st != nil && len(st.affinityCounts) == 0
	if st == nil {
		none = !nodeHasAllMatching(pod, node, ns)
	}
	return none && matchesAllTerms(pod.affinity, &pod.podFacts, ns)
}

func nodeHasAllMatching(pod *PodInfo, node *NodeInfo, ns map[string]map[string]string) bool {
	for _, other := range node.pods {
		if matchesAllTerms(pod.affinity, &other.podFacts, ns) {
			return true
		}
	}
	return false
}

// matchesAllTerms reports whether every term selects p.
func matchesAllTerms(terms []affinityTerm, p *podFacts, ns map[string]map[string]string) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].matches(p, ns) {
			return false
		}
	}
	return true
}

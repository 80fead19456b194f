package sched

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/berth-dev/berth/api"
)

var (
	statusAntiAffinity         = NewStatus("InterPodAffinity", ReasonAntiAffinity)
	statusExistingAntiAffinity = NewStatus("InterPodAffinity", ReasonExistingAntiAffinity)
)

// affinityTerm is a compiled required anti-affinity term: pods in
// namespaces whose labels match selector may not share the term's
// topology domain.
type affinityTerm struct {
	selector    labels.Selector
	namespaces  []string
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

func (t *affinityTerm) matches(p *podFacts) bool {
	return contains(t.namespaces, p.Namespace) && t.selector.Matches(labels.Set(p.Labels))
}

// compileAntiAffinity compiles the pod's required anti-affinity terms. As
// in Kubernetes, a term without a selector matches no pod, and one without
// namespaces means the pod's own.
func compileAntiAffinity(pod *api.Pod) []affinityTerm {
	a := pod.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return nil
	}
	var out []affinityTerm
	for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		ns := t.Namespaces
		if len(ns) == 0 {
			ns = []string{pod.Namespace}
		}
		term := affinityTerm{selector: sel, namespaces: ns, topologyKey: t.TopologyKey, key: termKey(sel, ns, t.TopologyKey)}
		if len(ns) == 1 {
			term.required, term.exact = requiredLabels(sel, ns[0])
		}
		out = append(out, term)
	}
	return out
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

// podAntiAffinity enforces required pod anti-affinity both ways: the pod
// may not join pods its terms select, nor pods whose terms select it. The
// topology domain is the node (berth admits only kubernetes.io/hostname);
// a node without the term's topology label is in no domain, so the term
// does not apply there, as in Kubernetes.
type podAntiAffinity struct{}

func (podAntiAffinity) Name() string { return "InterPodAffinity" }

// gate: a pod without terms of its own can only be turned away by pods
// with anti-affinity already on the node.
func (podAntiAffinity) gate(pod *PodInfo) nodeFlags {
	if len(pod.antiAffinity) > 0 {
		return 0
	}
	return flagAntiPods
}

func (podAntiAffinity) Filter(pod *PodInfo, node *NodeInfo) *Status {
	for i := range pod.antiAffinity {
		t := &pod.antiAffinity[i]
		if _, ok := node.labels[t.topologyKey]; !ok || t.ruledOut(node) {
			continue
		}
		if t.exact && node.labelsCounted {
			// Not ruled out: a pod here has the one label the term
			// requires, which is all it selects.
			return statusAntiAffinity
		}
		for _, other := range node.pods {
			if t.matches(&other.podFacts) {
				return statusAntiAffinity
			}
		}
	}
	if pod.antiPrepared {
		// The terms of placed pods that select this pod were found once
		// for the cycle (Nodes.antiTermsMatching), as kube-scheduler's
		// PreFilter does: a node only needs to say whether it holds one.
		for _, m := range pod.antiMatched {
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
			if t.matches(&pod.podFacts) {
				return statusExistingAntiAffinity
			}
		}
	}
	return nil
}

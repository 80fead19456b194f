package sched

import (
	"slices"
	"strconv"
	"strings"

	"github.com/berth-dev/berth/api"
)

// fieldNodeName is the one node field matchFields may name.
const fieldNodeName = "metadata.name"

var statusNodeAffinity = newUnresolvable("NodeAffinity", ReasonNodeAffinity)

// nodeAffinity keeps a pod on nodes that match its nodeSelector and its
// required node affinity, and prefers nodes matching more of the weight of
// its preferred terms.
type nodeAffinity struct{}

func (nodeAffinity) Name() string { return "NodeAffinity" }

func (nodeAffinity) SkipFilter(_ *CycleState, pod *PodInfo) bool { return pod.nodeSelector.empty() }

func (nodeAffinity) Filter(_ *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	if pod.nodeSelector.matches(node) {
		return nil
	}
	return statusNodeAffinity
}

func (a nodeAffinity) filterNodes(_ *CycleState, pod *PodInfo, nodes []*NodeInfo, status []*Status) {
	for k, n := range nodes {
		if status[k] == nil {
			status[k] = a.Filter(nil, pod, n)
		}
	}
}

func (nodeAffinity) SkipScore(_ *CycleState, pod *PodInfo) bool { return len(pod.preferred) == 0 }

// Score sums the weights of the preferred terms the node matches.
func (nodeAffinity) Score(_ *CycleState, pod *PodInfo, node *NodeInfo) int64 {
	var sum int64
	for i := range pod.preferred {
		if pod.preferred[i].term.matches(node) {
			sum += pod.preferred[i].weight
		}
	}
	return sum
}

func (nodeAffinity) Normalize(_ *CycleState, _ *PodInfo, _ []*NodeInfo, scores []int64) {
	normalizeScores(scores, false)
}

// nodeSelector is a pod's nodeSelector and required node affinity,
// compiled once per pod: both must match.
type nodeSelector struct {
	labels []labelPair
	// required says the pod has required node affinity; terms are ORed.
	required bool
	terms    []selectorTerm
}

type labelPair struct{ key, value string }

// selectorTerm is an AND of requirements. A term with none, or with one
// Kubernetes could not parse, matches no node, as there.
type selectorTerm struct {
	reqs  []requirement
	valid bool
}

type requirement struct {
	key    string
	op     api.NodeSelectorOperator
	values []string
	num    int64 // the value of Gt and Lt
	field  bool  // matchFields on metadata.name
}

type preferredTerm struct {
	weight int64
	term   selectorTerm
}

func (s *nodeSelector) empty() bool { return len(s.labels) == 0 && !s.required }

func (s *nodeSelector) matches(node *NodeInfo) bool {
	for _, l := range s.labels {
		if v, ok := node.labels[l.key]; !ok || v != l.value {
			return false
		}
	}
	if !s.required {
		return true
	}
	for i := range s.terms {
		if s.terms[i].matches(node) {
			return true
		}
	}
	return false
}

// NodeSelectorMatches reports whether a node of that name and labels
// satisfies sel, a required node selector such as a volume's node
// affinity: an OR of terms, each an AND of requirements, each checked as
// the scheduler checks a pod's (a term with a requirement Kubernetes would
// not parse matches nothing). A nil selector admits every node; one with
// no terms admits none.
func NodeSelectorMatches(sel *api.NodeSelector, name string, labels map[string]string) bool {
	if sel == nil {
		return true
	}
	node := &NodeInfo{name: name, labels: labels}
	for i := range sel.NodeSelectorTerms {
		if t := compileTerm(&sel.NodeSelectorTerms[i]); t.matches(node) {
			return true
		}
	}
	return false
}

func (t *selectorTerm) matches(node *NodeInfo) bool {
	if !t.valid {
		return false
	}
	for i := range t.reqs {
		if !t.reqs[i].matches(node) {
			return false
		}
	}
	return true
}

func (r *requirement) matches(node *NodeInfo) bool {
	if r.field {
		if r.op == api.NodeSelectorOpIn {
			return node.name == r.values[0]
		}
		return node.name != r.values[0]
	}
	v, ok := node.labels[r.key]
	switch r.op {
	case api.NodeSelectorOpIn:
		return ok && contains(r.values, v)
	case api.NodeSelectorOpNotIn:
		return !ok || !contains(r.values, v)
	case api.NodeSelectorOpExists:
		return ok
	case api.NodeSelectorOpDoesNotExist:
		return !ok
	case api.NodeSelectorOpGt, api.NodeSelectorOpLt:
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		if r.op == api.NodeSelectorOpGt {
			return n > r.num
		}
		return n < r.num
	}
	return false
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func compileNodeSelector(spec *api.PodSpec) nodeSelector {
	var s nodeSelector
	for k, v := range spec.NodeSelector {
		s.labels = append(s.labels, labelPair{k, v})
	}
	slices.SortFunc(s.labels, func(a, b labelPair) int { return strings.Compare(a.key, b.key) })
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		s.required = true
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			s.terms = append(s.terms, compileTerm(&t))
		}
	}
	return s
}

func compilePreferred(a *api.Affinity) []preferredTerm {
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	var out []preferredTerm
	for _, p := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		t := compileTerm(&p.Preference)
		// Kubernetes skips terms of weight 0 and empty terms.
		if p.Weight == 0 || !t.valid {
			continue
		}
		out = append(out, preferredTerm{weight: int64(p.Weight), term: t})
	}
	return out
}

func compileTerm(t *api.NodeSelectorTerm) selectorTerm {
	out := selectorTerm{valid: len(t.MatchExpressions)+len(t.MatchFields) > 0}
	for _, e := range t.MatchExpressions {
		r, ok := compileRequirement(e, false)
		out.valid = out.valid && ok
		out.reqs = append(out.reqs, r)
	}
	for _, e := range t.MatchFields {
		r, ok := compileRequirement(e, true)
		out.valid = out.valid && ok
		out.reqs = append(out.reqs, r)
	}
	return out
}

// compileRequirement checks a requirement as Kubernetes parses it: In and
// NotIn need values, Exists and DoesNotExist none, Gt and Lt one integer;
// fields support only In and NotIn on metadata.name with one value.
func compileRequirement(e api.NodeSelectorRequirement, field bool) (requirement, bool) {
	r := requirement{key: e.Key, op: e.Operator, values: e.Values, field: field}
	if field {
		ok := e.Key == fieldNodeName && len(e.Values) == 1 &&
			(e.Operator == api.NodeSelectorOpIn || e.Operator == api.NodeSelectorOpNotIn)
		return r, ok
	}
	switch e.Operator {
	case api.NodeSelectorOpIn, api.NodeSelectorOpNotIn:
		return r, len(e.Values) > 0
	case api.NodeSelectorOpExists, api.NodeSelectorOpDoesNotExist:
		return r, len(e.Values) == 0
	case api.NodeSelectorOpGt, api.NodeSelectorOpLt:
		if len(e.Values) != 1 {
			return r, false
		}
		n, err := strconv.ParseInt(e.Values[0], 10, 64)
		r.num = n
		return r, err == nil
	}
	return r, false
}

package sched

import (
	"slices"
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestNodeAffinityFilter(t *testing.T) {
	const mismatch = "[node(s) didn't match Pod's node affinity/selector]"
	node := makeNode("n1", nodeLabels("zone", "a", "disk", "ssd", "cores", "8"))
	term := func(rs ...api.NodeSelectorRequirement) api.NodeSelectorTerm {
		return api.NodeSelectorTerm{MatchExpressions: rs}
	}
	field := func(op api.NodeSelectorOperator, vs ...string) api.NodeSelectorTerm {
		return api.NodeSelectorTerm{MatchFields: []api.NodeSelectorRequirement{expr("metadata.name", op, vs...)}}
	}
	tests := []struct {
		name string
		pod  *api.Pod
		want string
	}{
		{"no constraint", makePod("p"), ""},
		{"selector matches", makePod("p", selector("zone", "a", "disk", "ssd")), ""},
		{"selector value differs", makePod("p", selector("zone", "b")), mismatch},
		{"selector key missing", makePod("p", selector("gpu", "true")), mismatch},
		{"In", makePod("p", requiredTerms(term(expr("zone", api.NodeSelectorOpIn, "b", "a")))), ""},
		{"In, no value", makePod("p", requiredTerms(term(expr("zone", api.NodeSelectorOpIn, "b")))), mismatch},
		{"In, key missing", makePod("p", requiredTerms(term(expr("gpu", api.NodeSelectorOpIn, "x")))), mismatch},
		{"NotIn", makePod("p", requiredTerms(term(expr("zone", api.NodeSelectorOpNotIn, "b")))), ""},
		{"NotIn, key missing", makePod("p", requiredTerms(term(expr("gpu", api.NodeSelectorOpNotIn, "x")))), ""},
		{"NotIn, value listed", makePod("p", requiredTerms(term(expr("zone", api.NodeSelectorOpNotIn, "a")))), mismatch},
		{"Exists", makePod("p", requiredTerms(term(expr("disk", api.NodeSelectorOpExists)))), ""},
		{"Exists, missing", makePod("p", requiredTerms(term(expr("gpu", api.NodeSelectorOpExists)))), mismatch},
		{"DoesNotExist", makePod("p", requiredTerms(term(expr("gpu", api.NodeSelectorOpDoesNotExist)))), ""},
		{"DoesNotExist, present", makePod("p", requiredTerms(term(expr("disk", api.NodeSelectorOpDoesNotExist)))), mismatch},
		{"Gt", makePod("p", requiredTerms(term(expr("cores", api.NodeSelectorOpGt, "4")))), ""},
		{"Gt, equal", makePod("p", requiredTerms(term(expr("cores", api.NodeSelectorOpGt, "8")))), mismatch},
		{"Lt", makePod("p", requiredTerms(term(expr("cores", api.NodeSelectorOpLt, "16")))), ""},
		{"Lt, larger", makePod("p", requiredTerms(term(expr("cores", api.NodeSelectorOpLt, "8")))), mismatch},
		{"Gt, label not a number", makePod("p", requiredTerms(term(expr("zone", api.NodeSelectorOpGt, "1")))), mismatch},
		{"Gt, value not a number", makePod("p", requiredTerms(term(expr("cores", api.NodeSelectorOpGt, "x")))), mismatch},
		{"expressions are ANDed", makePod("p", requiredTerms(term(expr("zone", api.NodeSelectorOpIn, "a"), expr("gpu", api.NodeSelectorOpExists)))), mismatch},
		{"terms are ORed", makePod("p", requiredTerms(term(expr("gpu", api.NodeSelectorOpExists)), term(expr("zone", api.NodeSelectorOpIn, "a")))), ""},
		{"empty term matches nothing", makePod("p", requiredTerms(api.NodeSelectorTerm{})), mismatch},
		{"no terms matches nothing", makePod("p", requiredTerms()), mismatch},
		{"matchFields In", makePod("p", requiredTerms(field(api.NodeSelectorOpIn, "n1"))), ""},
		{"matchFields In, other node", makePod("p", requiredTerms(field(api.NodeSelectorOpIn, "n2"))), mismatch},
		{"matchFields NotIn", makePod("p", requiredTerms(field(api.NodeSelectorOpNotIn, "n2"))), ""},
		{"matchFields Exists is invalid", makePod("p", requiredTerms(field(api.NodeSelectorOpExists))), mismatch},
		{"selector and affinity both", makePod("p", selector("zone", "b"), requiredTerms(term(expr("disk", api.NodeSelectorOpExists)))), mismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPodInfo(tt.pod)
			var st *Status
			if !(nodeAffinity{}).SkipFilter(nil, p) {
				st = nodeAffinity{}.Filter(nil, p, NewNodeInfo(node))
			}
			if got := reasonsOf(st); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// Raw score: the sum of the weights of matching preferred terms;
// normalised: 100 * sum / highest sum.
func TestNodeAffinityScore(t *testing.T) {
	prefer := func(p *api.Pod) {
		p.Spec.Affinity = &api.Affinity{NodeAffinity: &api.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []api.PreferredSchedulingTerm{
			{Weight: 10, Preference: api.NodeSelectorTerm{MatchExpressions: []api.NodeSelectorRequirement{expr("zone", api.NodeSelectorOpIn, "a")}}},
			{Weight: 5, Preference: api.NodeSelectorTerm{MatchExpressions: []api.NodeSelectorRequirement{expr("disk", api.NodeSelectorOpIn, "ssd")}}},
			{Weight: 0, Preference: api.NodeSelectorTerm{MatchExpressions: []api.NodeSelectorRequirement{expr("zone", api.NodeSelectorOpExists)}}},
			{Weight: 50, Preference: api.NodeSelectorTerm{}},
		}}}
	}
	nodes := []*NodeInfo{
		NewNodeInfo(makeNode("both", nodeLabels("zone", "a", "disk", "ssd"))),
		NewNodeInfo(makeNode("zone", nodeLabels("zone", "a"))),
		NewNodeInfo(makeNode("disk", nodeLabels("zone", "b", "disk", "ssd"))),
		NewNodeInfo(makeNode("neither")),
	}
	p := NewPodInfo(makePod("p", prefer))
	got := make([]int64, len(nodes))
	for i, n := range nodes {
		got[i] = nodeAffinity{}.Score(nil, p, n)
	}
	if want := []int64{15, 10, 5, 0}; !slices.Equal(got, want) {
		t.Fatalf("raw scores %v, want %v", got, want)
	}
	nodeAffinity{}.Normalize(nil, p, nodes, got)
	// 100*10/15 = 66, 100*5/15 = 33
	if want := []int64{100, 66, 33, 0}; !slices.Equal(got, want) {
		t.Errorf("normalised %v, want %v", got, want)
	}
	if !(nodeAffinity{}).SkipScore(nil, NewPodInfo(makePod("q"))) {
		t.Error("a pod without preferred terms should skip the score")
	}
}

func TestNodeSelectorMatches(t *testing.T) {
	req := func(key string, op api.NodeSelectorOperator, values ...string) api.NodeSelectorRequirement {
		return api.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	labels := map[string]string{"zone": "a", "disks": "4"}
	for _, tt := range []struct {
		name string
		sel  *api.NodeSelector
		want bool
	}{
		{"nil admits every node", nil, true},
		{"no terms admit none", &api.NodeSelector{}, false},
		{"an empty term matches nothing", &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{}}}, false},
		{"In", &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{MatchExpressions: []api.NodeSelectorRequirement{req("zone", api.NodeSelectorOpIn, "a", "b")}}}}, true},
		{"terms are ORed", &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{
			{MatchExpressions: []api.NodeSelectorRequirement{req("zone", api.NodeSelectorOpIn, "b")}},
			{MatchExpressions: []api.NodeSelectorRequirement{req("disks", api.NodeSelectorOpGt, "3")}},
		}}, true},
		{"requirements are ANDed", &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{MatchExpressions: []api.NodeSelectorRequirement{
			req("zone", api.NodeSelectorOpIn, "a"), req("disks", api.NodeSelectorOpLt, "4"),
		}}}}, false},
		{"the node's name by field", &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{MatchFields: []api.NodeSelectorRequirement{req("metadata.name", api.NodeSelectorOpIn, "n1")}}}}, true},
		{"an unparsable requirement matches nothing", &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{MatchExpressions: []api.NodeSelectorRequirement{req("zone", api.NodeSelectorOpIn)}}}}, false},
	} {
		if got := NodeSelectorMatches(tt.sel, "n1", labels); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

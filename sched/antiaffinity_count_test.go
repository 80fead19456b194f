package sched

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// TestAntiAffinityLabelCounts checks the node's label counts that let an
// anti-affinity term rule a node out without reading its pods: they
// follow pods added and removed, and a term whose selector requires no
// single value still reads the pods.
func TestAntiAffinityLabelCounts(t *testing.T) {
	const mine = "[node(s) didn't match pod anti-affinity rules]"
	web := NewPodInfo(makePod("a", podLabels("app", "web"))).placed()
	db := NewPodInfo(makePod("b", podLabels("app", "db"))).placed()
	n := NewNodeInfo(makeNode("n"))
	n.addPod(web)
	n.addPod(db)
	loner := NewPodInfo(makePod("p", podLabels("app", "web"), antiAffinity(nil, "app", "web")))
	notDB := makePod("q")
	notDB.Spec.Affinity = &api.Affinity{PodAntiAffinity: &api.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []api.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}},
			}},
			TopologyKey: api.LabelHostname,
		}},
	}}
	notDBInfo := NewPodInfo(notDB)
	if l, d := loner.antiAffinity[0], notDBInfo.antiAffinity[0]; len(l.required) != 1 || !l.exact || len(d.required) != 0 || d.exact {
		t.Fatalf("app=web: %+v; app notin (db): %+v", l, d)
	}
	steps := []struct {
		name         string
		change       func()
		loner, notDB string
		counted      int
	}{
		{"web and db there", func() {}, mine, mine, 2},
		{"web gone", func() { n.removePod(web) }, "", "", 1},
		{"web back", func() { n.addPod(web) }, mine, mine, 2},
		{"all gone", func() { n.removePod(web); n.removePod(db) }, "", "", 0},
	}
	for _, s := range steps {
		s.change()
		if got := reasonsOf(interPodAffinity{}.Filter(nil, loner, n)); got != s.loner {
			t.Errorf("%s: app=web term: %q, want %q", s.name, got, s.loner)
		}
		if got := reasonsOf(interPodAffinity{}.Filter(nil, notDBInfo, n)); got != s.notDB {
			t.Errorf("%s: app notin (db) term: %q, want %q", s.name, got, s.notDB)
		}
		if len(n.labelPods) != s.counted {
			t.Errorf("%s: label counts %v", s.name, n.labelPods)
		}
	}
}

// A term requiring two labels is not decided by the counts: pods with one
// label each do not make a pod with both.
func TestAntiAffinityTwoLabelsReadsPods(t *testing.T) {
	n := NewNodeInfo(makeNode("n"),
		NewPodInfo(makePod("a", podLabels("app", "web"))),
		NewPodInfo(makePod("b", podLabels("tier", "front"))))
	p := makePod("p")
	p.Spec.Affinity = &api.Affinity{PodAntiAffinity: &api.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []api.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}},
			TopologyKey:   api.LabelHostname,
		}},
	}}
	info := NewPodInfo(p)
	if term := info.antiAffinity[0]; len(term.required) != 2 || term.exact {
		t.Fatalf("term %+v", term)
	}
	if got := reasonsOf(interPodAffinity{}.Filter(nil, info, n)); got != "" {
		t.Errorf("got %q, want the node accepted", got)
	}
	both := NewPodInfo(makePod("c", podLabels("app", "web"), podLabels("tier", "front"))).placed()
	n.addPod(both)
	if got := reasonsOf(interPodAffinity{}.Filter(nil, info, n)); got != "[node(s) didn't match pod anti-affinity rules]" {
		t.Errorf("got %q with a pod of both labels", got)
	}
}

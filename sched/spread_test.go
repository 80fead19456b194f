package sched

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// Expected values follow kube-scheduler's PodTopologySpread under its
// system default (hostname, maxSkew 3): raw = round(count * ln(n+2) + 2),
// then 100 * (max + min - raw) / max over the n nodes scored.
func TestPodTopologySpread(t *testing.T) {
	owned := func(name string) *api.Pod { return makePod(name, ownedBy("rs1")) }
	other := func(name string) *api.Pod { return makePod(name, ownedBy("rs2")) }
	terminating := func(name string) *api.Pod {
		p := owned(name)
		p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		return p
	}
	tests := []struct {
		name  string
		nodes *Nodes
		want  []int64
	}{
		// ln 5 = 1.609: raw 2, 4, 5; 100*(7-2)/5, 100*(7-4)/5, 100*(7-5)/5
		{"0, 1, 2 pods", cluster(
			on(makeNode("a")),
			on(makeNode("b"), owned("b1")),
			on(makeNode("c"), owned("c1"), owned("c2")),
		), []int64{100, 60, 40}},
		// ln 6 = 1.792: raw 2, 2, 4, 7; 100*(9-2)/7, …, 100*(9-4)/7 = 71, 100*(9-7)/7 = 28
		{"0, 0, 1, 3 pods", cluster(
			on(makeNode("a")),
			on(makeNode("b"), other("b1"), other("b2")),
			on(makeNode("c"), owned("c1")),
			on(makeNode("d"), owned("d1"), owned("d2"), owned("d3")),
		), []int64{100, 100, 71, 28}},
		// terminating pods do not count. ln 4 = 1.386: raw 2, 3;
		// 100*(5-2)/3, 100*(5-3)/3
		{"terminating", cluster(
			on(makeNode("a"), terminating("a1"), terminating("a2")),
			on(makeNode("b"), owned("b1")),
		), []int64{100, 66}},
		// a node without the hostname label is in no domain: raw 0.
		// ln 4 = 1.386: raw 0, round(2+2.77) = 5; 100*(5-0)/5, 100*(5-5)/5
		{"no hostname label", cluster(
			on(makeNode("a", noHostname), owned("a1"), owned("a2")),
			on(makeNode("b"), owned("b1"), owned("b2")),
		), []int64{100, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPodInfo(owned("new"))
			p.spread = tt.nodes.ownerCounts(p.Owner)
			nodes := tt.nodes.List()
			got := make([]int64, len(nodes))
			for i, n := range nodes {
				got[i] = podTopologySpread{}.Score(p, n)
			}
			podTopologySpread{}.Normalize(p, nodes, got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if !(podTopologySpread{}).SkipScore(NewPodInfo(makePod("bare"))) {
		t.Error("a pod without a controller should skip spreading")
	}
}

// Owner columns follow pods on and off nodes, and go when empty; a node
// slot freed by a deleted node is reused.
func TestOwnerColumns(t *testing.T) {
	ns := NewNodes(makeNode("a"), makeNode("b"))
	var pods []*placedPod
	for i := range 3 {
		p := NewPodInfo(makePod(fmt.Sprint("p", i), ownedBy("rs1"))).placed()
		pods = append(pods, p)
		ns.AddPod("b", p)
	}
	owner := pods[0].Owner
	if got := ns.ownerCounts(owner); len(got) != 2 || got[0] != 0 || got[1] != 3 {
		t.Fatalf("column %v, want [0 3]", got)
	}
	for _, p := range pods {
		ns.RemovePod(ns.Get("b"), p)
	}
	if got := ns.ownerCounts(owner); got != nil {
		t.Errorf("column %v left after the last pod", got)
	}
	ns.Remove("a")
	n, _ := ns.Set(makeNode("c"))
	if n.index != 0 || len(ns.List()) != 2 {
		t.Errorf("new node got slot %d, list %d", n.index, len(ns.List()))
	}
}

// Counts beyond the memo take the same formula.
func TestPodTopologySpreadLargeCounts(t *testing.T) {
	var nps []nodePods
	counts := []int{0, 63, 64, 200}
	for i, c := range counts {
		var pods []*api.Pod
		for j := range c {
			pods = append(pods, makePod(fmt.Sprintf("p%d-%d", i, j), ownedBy("rs1")))
		}
		nps = append(nps, on(makeNode(fmt.Sprint("n", i), allocatable("100", "100Gi", 500)), pods...))
	}
	ns := cluster(nps...)
	p := NewPodInfo(makePod("new", ownedBy("rs1")))
	p.spread = ns.ownerCounts(p.Owner)
	got := make([]int64, len(counts))
	for i, n := range ns.List() {
		got[i] = podTopologySpread{}.Score(p, n)
	}
	podTopologySpread{}.Normalize(p, ns.List(), got)
	// ln 6 = 1.7918: raw 2, round(112.88+2) = 115, round(114.67+2) = 117,
	// round(358.35+2) = 360; 100*(362-raw)/360
	if want := []int64{100, 68, 68, 0}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

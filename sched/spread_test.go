package sched

import (
	"fmt"
	"math/rand/v2"
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
			nodes := tt.nodes.List()
			if got := spreadScores(tt.nodes, p, nodes); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if !(podTopologySpread{}).SkipScore(nil, NewPodInfo(makePod("bare"))) {
		t.Error("a pod without a controller should skip spreading")
	}
}

// spreadScores scores the nodes of all for p and normalises the scores,
// as the framework does: PreScore, Score each node, Normalize.
func spreadScores(all *Nodes, p *PodInfo, nodes []*NodeInfo) []int64 {
	state := NewCycleState(all)
	podTopologySpread{}.PreScore(state, p, nodes)
	got := make([]int64, len(nodes))
	for i, n := range nodes {
		got[i] = podTopologySpread{}.Score(state, p, n)
	}
	podTopologySpread{}.Normalize(state, p, nodes, got)
	return got
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
	got := spreadScores(ns, p, ns.List())
	// ln 6 = 1.7918: raw 2, round(112.88+2) = 115, round(114.67+2) = 117,
	// round(358.35+2) = 360; 100*(362-raw)/360
	if want := []int64{100, 68, 68, 0}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// With zone labels, kube-scheduler's second system default constraint
// (topology.kubernetes.io/zone, maxSkew 5) joins the hostname one: a
// node's raw score adds, for each label it has, count × ln(domains + 2) +
// (maxSkew − 1); a zone's count is of the owner's pods on the nodes the
// pod's node affinity accepts.
func TestPodTopologySpreadZones(t *testing.T) {
	zone := func(z string) func(*api.Node) { return nodeLabels(api.LabelTopologyZone, z) }
	owned := func(name string, opts ...func(*api.Pod)) *api.Pod {
		return makePod(name, append([]func(*api.Pod){ownedBy("rs1")}, opts...)...)
	}
	tests := []struct {
		name  string
		nodes *Nodes
		pod   *api.Pod
		// scored are the nodes scored (those the filters passed), by
		// their order in the list.
		scored []int
		want   []int64
	}{
		// Hostname weight ln 6 = 1.792; zones z1, z2 and none (a domain
		// too): ln 5 = 1.609. Zone counts z1 3, z2 0. Raw: a 3.584 + 2 +
		// 4.828 + 4 = 14; b 1.792 + 2 + 4.828 + 4 = 13; c 2 + 4 = 6; d
		// (no zone) 2. 100 × (16 − raw) / 14. (Without the domain of the
		// zoneless, b would score 28.)
		{"two zones and a node without one", cluster(
			on(makeNode("a", zone("z1")), owned("a1"), owned("a2")),
			on(makeNode("b", zone("z1")), owned("b1")),
			on(makeNode("c", zone("z2"))),
			on(makeNode("d")),
		), owned("new"), []int{0, 1, 2, 3}, []int64{14, 21, 71, 100}},
		// The pod asks for ssd nodes: b's three pods are on a node it
		// does not accept and do not count for z1. Scored a and c: both
		// weights ln 4 = 1.386. Raw: a 2 + 0 + 4 = 6; c 1.386 + 2 +
		// 1.386 + 4 = 9. 100 × (15 − raw) / 9. (Counting b's pods, a
		// would score 90 and c 100.)
		{"node affinity bounds the zone counts", cluster(
			on(makeNode("a", zone("z1"), nodeLabels("disk", "ssd"))),
			on(makeNode("b", zone("z1")), owned("b1"), owned("b2"), owned("b3")),
			on(makeNode("c", zone("z2"), nodeLabels("disk", "ssd")), owned("c1")),
		), owned("new", selector("disk", "ssd")), []int{0, 2}, []int64{100, 66}},
		// An empty zone label is the same domain as none (kube's ""
		// value), and still a label: b gets a zone term counting c's
		// pods. Weights ln 5 = 1.609, ln 4 = 1.386 (z1 and ""). Raw: a
		// 1.609 + 2 + 1.386 + 4 = 9; b 2 + 2.773 + 4 = 9; c (no label)
		// 3.219 + 2 = 5. 100 × (14 − raw) / 9.
		{"an empty zone label", cluster(
			on(makeNode("a", zone("z1")), owned("a1")),
			on(makeNode("b", zone(""))),
			on(makeNode("c"), owned("c1"), owned("c2")),
		), owned("new"), []int{0, 1, 2}, []int64{55, 55, 100}},
		// A node without the hostname label has its zone term alone:
		// weights ln 4 = 1.386, ln 3 = 1.099. Raw: a 1.099 + 4 = 5; b 2 +
		// 1.099 + 4 = 7. 100 × (12 − raw) / 7.
		{"no hostname label", cluster(
			on(makeNode("a", zone("z1"), noHostname), owned("a1")),
			on(makeNode("b", zone("z1"))),
		), owned("new"), []int{0, 1}, []int64{100, 71}},
		// Nodes scored with neither label all score 0: all 100.
		{"no label on the nodes scored", cluster(
			on(makeNode("a", noHostname), owned("a1")),
			on(makeNode("b", noHostname)),
			on(makeNode("c", zone("z1"))),
		), owned("new"), []int{0, 1}, []int64{100, 100}},
		// Another controller's pods do not count: with none of its own
		// anywhere, every node scores 2 + 4 = 6, and all score 100.
		{"no pod in any zone", cluster(
			on(makeNode("a", zone("z1"))),
			on(makeNode("b", zone("z1")), makePod("other", ownedBy("rs2"))),
		), owned("new"), []int{0, 1}, []int64{100, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPodInfo(tt.pod)
			if tt.nodes.zoneCounts(p, tt.nodes.ownerCounts(p.Owner), nil) == nil {
				t.Fatal("no zone counts with zoned nodes")
			}
			var nodes []*NodeInfo
			for _, i := range tt.scored {
				nodes = append(nodes, tt.nodes.List()[i])
			}
			if got := spreadScores(tt.nodes, p, nodes); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Zones follow the nodes' labels: a node that gains, changes or loses
// its zone, or goes, moves its pods' counts with it, and a cluster
// without zones has no zone counts at all.
func TestZoneCountsFollowNodes(t *testing.T) {
	ns := cluster(
		on(makeNode("a"), makePod("a1", ownedBy("rs1"))),
		on(makeNode("b"), makePod("b1", ownedBy("rs1")), makePod("b2", ownedBy("rs1"))),
	)
	p := NewPodInfo(makePod("new", ownedBy("rs1")))
	zoneCounts := func() []int32 { return ns.zoneCounts(p, ns.ownerCounts(p.Owner), nil) }
	if got := zoneCounts(); got != nil {
		t.Fatalf("zone counts %v without zones", got)
	}
	ns.Set(makeNode("a", nodeLabels(api.LabelTopologyZone, "z1")))
	ns.Set(makeNode("b", nodeLabels(api.LabelTopologyZone, "z1")))
	z1 := ns.zoneIDs["z1"]
	if got := zoneCounts(); got[z1] != 3 {
		t.Fatalf("z1 counts %v, want 3", got)
	}
	ns.Set(makeNode("b", nodeLabels(api.LabelTopologyZone, "z2")))
	got := zoneCounts()
	if z2 := ns.zoneIDs["z2"]; got[z1] != 1 || got[z2] != 2 {
		t.Fatalf("counts %v after b moved to z2", got)
	}
	ns.Set(makeNode("b"))
	if got := zoneCounts(); got[z1] != 1 || ns.zoned != 1 {
		t.Fatalf("counts %v, zoned nodes %d after b lost its zone", got, ns.zoned)
	}
	ns.Remove("a")
	if got := zoneCounts(); got != nil || ns.zoned != 0 {
		t.Fatalf("counts %v, zoned nodes %d after a went", got, ns.zoned)
	}
}

// The zone sums each owner keeps agree with counting its pods node by
// node, through random placements, removals and zone changes.
func TestZoneSumsAgreeWithNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// "none" is no label; "" an empty one.
	zones := []string{"none", "", "z1", "z2", "z3"}
	node := func(i int) *api.Node {
		n := makeNode(fmt.Sprint("n", i))
		if z := zones[rng.IntN(len(zones))]; z != "none" {
			n.Labels[api.LabelTopologyZone] = z
		}
		return n
	}
	ns := NewNodes()
	for i := range 8 {
		ns.Set(node(i))
	}
	type placement struct {
		node string
		pod  *placedPod
	}
	var placed []placement
	for step := range 2000 {
		switch r := rng.IntN(10); {
		case r < 5:
			pod := makePod(fmt.Sprint("p", step), ownedBy(fmt.Sprint("rs", rng.IntN(3))))
			if rng.IntN(5) == 0 {
				pod.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
			}
			p := NewPodInfo(pod).placed()
			name := fmt.Sprint("n", rng.IntN(9)) // n8 has no Node object
			ns.AddPod(name, p)
			placed = append(placed, placement{name, p})
		case r < 7 && len(placed) > 0:
			k := rng.IntN(len(placed))
			ns.RemovePod(ns.Get(placed[k].node), placed[k].pod)
			placed = slices.Delete(placed, k, k+1)
		case r < 9:
			ns.Set(node(rng.IntN(8)))
		default:
			ns.Remove(fmt.Sprint("n", rng.IntN(8)))
		}
		for owner := range 3 {
			p := NewPodInfo(makePod("new", ownedBy(fmt.Sprint("rs", owner))))
			column := ns.ownerCounts(p.Owner)
			got := ns.zoneCounts(p, column, nil)
			if got == nil {
				continue
			}
			want := make([]int32, len(got))
			// Every listed node counts in the zone its label names (the
			// number zoneIDs gives it), 0 for none or an empty one; a node
			// without a Node object (n8) in none.
			for _, n := range ns.List() {
				if int(n.index) < len(column) {
					want[ns.zoneIDs[n.Node().Labels[api.LabelTopologyZone]]] += column[n.index]
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d, rs%d: zone sums %v, by node %v", step, owner, got, want)
			}
		}
	}
}

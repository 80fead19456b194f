package sched

import (
	"errors"
	"fmt"
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		nodes      int
		percentage int32
		want       int
	}{
		{50, 0, 50},     // under 100: all
		{99, 0, 99},     // under 100: all
		{100, 0, 100},   // 49%, below the floor of 100
		{200, 0, 100},   // 49% = 98, below the floor
		{1000, 0, 420},  // 50 - 8 = 42%
		{5000, 0, 500},  // 50 - 40 = 10%
		{6000, 0, 300},  // 50 - 48 = 2%, raised to 5%
		{10000, 0, 500}, // 5%
		{1000, 30, 300}, // configured
		{1000, 100, 1000},
	}
	for _, tt := range tests {
		if got := NumFeasibleNodesToFind(tt.percentage, tt.nodes); got != tt.want {
			t.Errorf("%d nodes at %d%%: %d, want %d", tt.nodes, tt.percentage, got, tt.want)
		}
	}
}

func identicalNodes(n int, opts ...func(i int) []func(*api.Node)) *Nodes {
	ns := NewNodes()
	for i := range n {
		var o []func(*api.Node)
		for _, f := range opts {
			o = append(o, f(i)...)
		}
		ns.Set(makeNode(fmt.Sprintf("node-%04d", i), o...))
	}
	return ns
}

func nodeIndex(t *testing.T, name string) int {
	var i int
	if _, err := fmt.Sscanf(name, "node-%04d", &i); err != nil {
		t.Fatal(err)
	}
	return i
}

// Over 100 nodes only a sample is filtered and scored, each cycle starting
// where the last one stopped.
func TestSamplingRotates(t *testing.T) {
	nodes := identicalNodes(1000)
	fw := NewFramework(FrameworkOptions{Seed: 1})
	for cycle := range 5 {
		res, err := fw.Schedule(NewPodInfo(makePod(fmt.Sprint("p", cycle))), nodes)
		if err != nil {
			t.Fatal(err)
		}
		if res.Feasible != 420 || res.Evaluated != 420 {
			t.Errorf("cycle %d: feasible %d, evaluated %d, want 420 each", cycle, res.Feasible, res.Evaluated)
		}
		// The window starts at 420*cycle mod 1000 and wraps.
		start := 420 * cycle % 1000
		if off := (nodeIndex(t, res.Node) - start + 1000) % 1000; off >= 420 {
			t.Errorf("cycle %d chose %s, outside the window from %d", cycle, res.Node, start)
		}
	}
}

// Rejected nodes count as evaluated, so the next window starts after them.
func TestSamplingSkipsInfeasible(t *testing.T) {
	nodes := identicalNodes(200, func(i int) []func(*api.Node) {
		if i < 150 {
			return []func(*api.Node){cordoned}
		}
		return nil
	})
	fw := NewFramework(FrameworkOptions{})
	res, err := fw.Schedule(NewPodInfo(makePod("p")), nodes)
	if err != nil {
		t.Fatal(err)
	}
	// 100 wanted, only 50 exist: every node is evaluated.
	if res.Feasible != 50 || res.Evaluated != 200 {
		t.Errorf("feasible %d, evaluated %d, want 50 and 200", res.Feasible, res.Evaluated)
	}
	if i := nodeIndex(t, res.Node); i < 150 {
		t.Errorf("chose cordoned %s", res.Node)
	}
}

func TestScheduleDeterministic(t *testing.T) {
	run := func(seed int64) []string {
		nodes := identicalNodes(30)
		fw := NewFramework(FrameworkOptions{Seed: seed})
		var got []string
		for i := range 20 {
			p := NewPodInfo(makePod(fmt.Sprint("p", i)))
			res, err := fw.Schedule(p, nodes)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, res.Node)
		}
		return got
	}
	a, b, c := run(7), run(7), run(8)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("same seed, different choices:\n%v\n%v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("different seeds, same choices: %v", a)
	}
}

// The weighted sum decides: here LeastAllocated and BalancedAllocation
// prefer the empty node, but an untolerated PreferNoSchedule taint (weight
// 3) outweighs them.
func TestScheduleWeights(t *testing.T) {
	nodes := cluster(
		on(makeNode("empty-soft-tainted", taints(taint("soft", "", api.TaintEffectPreferNoSchedule)))),
		on(makeNode("half-full"), makePod("a", requests("2", "8Gi"))),
	)
	fw := NewFramework(FrameworkOptions{})
	res, err := fw.Schedule(NewPodInfo(makePod("p", requests("100m", "100Mi"))), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if res.Node != "half-full" {
		t.Errorf("chose %s", res.Node)
	}
	// Without the taint, the empty node wins.
	nodes = cluster(on(makeNode("empty")), on(makeNode("half-full"), makePod("a", requests("2", "8Gi"))))
	if res, _ := fw.Schedule(NewPodInfo(makePod("p", requests("100m", "100Mi"))), nodes); res.Node != "empty" {
		t.Errorf("chose %s", res.Node)
	}
	// MostAllocated packs instead.
	most := NewFramework(FrameworkOptions{MostAllocated: true})
	if res, _ := most.Schedule(NewPodInfo(makePod("p", requests("100m", "100Mi"))), nodes); res.Node != "half-full" {
		t.Errorf("MostAllocated chose %s", res.Node)
	}
}

type volumeHook struct {
	only string
	err  error
}

func (v volumeHook) ForPod(pod *api.Pod) (func(*NodeInfo) *Status, error) {
	if v.err != nil {
		return nil, v.err
	}
	if len(pod.Spec.Volumes) == 0 {
		return nil, nil
	}
	return func(n *NodeInfo) *Status {
		if n.Name() == v.only {
			return nil
		}
		return StatusVolumeNodeAffinityConflict
	}, nil
}

func TestVolumeFilterHook(t *testing.T) {
	nodes := identicalNodes(3)
	withVolume := makePod("p", func(p *api.Pod) {
		p.Spec.Volumes = []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	})
	fw := NewFramework(FrameworkOptions{Volumes: volumeHook{only: "node-0002"}})
	res, err := fw.Schedule(NewPodInfo(withVolume), nodes)
	if err != nil || res.Node != "node-0002" {
		t.Errorf("got %+v, %v", res, err)
	}
	fw = NewFramework(FrameworkOptions{Volumes: volumeHook{only: "elsewhere"}})
	_, err = fw.Schedule(NewPodInfo(withVolume), nodes)
	if err == nil || err.Error() != "0/3 nodes are available: 3 node(s) had volume node affinity conflict." {
		t.Errorf("got %v", err)
	}
	broken := errors.New("claim data not found")
	fw = NewFramework(FrameworkOptions{Volumes: volumeHook{err: broken}})
	if _, err := fw.Schedule(NewPodInfo(withVolume), nodes); !errors.Is(err, broken) {
		t.Errorf("got %v", err)
	}
}

// Spreading decides between nodes equal in every other way: each holds two
// pods, of which the owner's are 2, 1 and 0.
func TestScheduleSpreads(t *testing.T) {
	rs1 := func(name string) *api.Pod { return makePod(name, ownedBy("rs1")) }
	rs2 := func(name string) *api.Pod { return makePod(name, ownedBy("rs2")) }
	for seed := range int64(10) {
		nodes := cluster(
			on(makeNode("two"), rs1("a"), rs1("b")),
			on(makeNode("one"), rs1("c"), rs2("d")),
			on(makeNode("none"), rs2("e"), rs2("f")),
		)
		fw := NewFramework(FrameworkOptions{Seed: seed})
		res, err := fw.Schedule(NewPodInfo(rs1("new")), nodes)
		if err != nil || res.Node != "none" {
			t.Fatalf("seed %d: %+v, %v", seed, res, err)
		}
	}
}

// Once nodes have zones, a controller's pods spread over zones too: of
// two empty nodes, the one in the zone without the controller's pods
// wins, whatever the tie-breaking seed. (By node alone they tie.)
func TestScheduleSpreadsOverZones(t *testing.T) {
	rs1 := func(name string) *api.Pod { return makePod(name, ownedBy("rs1")) }
	zone := func(z string) func(*api.Node) { return nodeLabels(api.LabelTopologyZone, z) }
	for seed := range int64(10) {
		nodes := cluster(
			on(makeNode("busy", zone("z1")), rs1("a"), rs1("b")),
			on(makeNode("empty-z1", zone("z1"))),
			on(makeNode("empty-z2", zone("z2"))),
		)
		fw := NewFramework(FrameworkOptions{Seed: seed})
		res, err := fw.Schedule(NewPodInfo(rs1("new")), nodes)
		if err != nil || res.Node != "empty-z2" {
			t.Fatalf("seed %d: %+v, %v", seed, res, err)
		}
	}
}

// A batch scorer or filter must give what Score or Filter gives node by
// node.
func TestBatchPluginsAgree(t *testing.T) {
	var nps []nodePods
	for i := range 20 {
		var pods []*api.Pod
		for j := range i % 5 {
			pods = append(pods, makePod(fmt.Sprintf("p%d-%d", i, j), ownedBy(fmt.Sprint("rs", j%2)), requests(fmt.Sprintf("%dm", 100*(i+j)), fmt.Sprintf("%dMi", 50*(i*j+1)))))
		}
		nps = append(nps, on(makeNode(fmt.Sprint("n", i), allocatable(fmt.Sprint(1+i%4), fmt.Sprintf("%dGi", 1+i%3), 110)), pods...))
	}
	ns := cluster(nps...)
	nodes := ns.List()
	for _, pod := range []*api.Pod{
		makePod("big", requests("2", "2Gi"), ephemeral("1Gi")),
		makePod("picky", requests("100m", ""), requiredTerms(api.NodeSelectorTerm{MatchFields: []api.NodeSelectorRequirement{expr("metadata.name", api.NodeSelectorOpNotIn, "n3")}})),
	} {
		for _, pl := range []FilterPlugin{resourcesFit{}, nodeAffinity{}} {
			p := NewPodInfo(pod)
			batch := make([]*Status, len(nodes))
			batch[0] = statusNodeName // already rejected: left alone
			pl.(batchFilter).filterNodes(nil, p, nodes, batch)
			for k, n := range nodes[1:] {
				if one := pl.Filter(nil, p, n); one != batch[k+1] {
					t.Errorf("%T on %s: Filter %v, batch %v", pl, n.Name(), one, batch[k+1])
				}
			}
			if batch[0] != statusNodeName {
				t.Errorf("%T overwrote an earlier rejection", pl)
			}
		}
	}
	for _, pod := range []*api.Pod{makePod("new", ownedBy("rs1"), requests("300m", "200Mi")), makePod("bare")} {
		for _, pl := range []ScorePlugin{leastAllocated{}, mostAllocated{}, balancedAllocation{}, podTopologySpread{}} {
			p := NewPodInfo(pod)
			state := NewCycleState(ns)
			if pre, ok := pl.(PreScorePlugin); ok {
				pre.PreScore(state, p, nodes)
			}
			batch := make([]int64, len(nodes))
			pl.(batchScorer).scoreNodes(state, p, nodes, batch)
			for k, n := range nodes {
				if one := pl.Score(state, p, n); one != batch[k] {
					t.Errorf("%T on %s: Score %d, batch %d", pl, n.Name(), one, batch[k])
				}
			}
		}
	}
}

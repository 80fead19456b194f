package sched

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestPodAntiAffinity(t *testing.T) {
	const (
		mine     = "[node(s) didn't match pod anti-affinity rules]"
		existing = "[node(s) didn't satisfy existing pods anti-affinity rules]"
	)
	web := func(name string) *api.Pod { return makePod(name, podLabels("app", "web")) }
	loner := makePod("p", podLabels("app", "web"), antiAffinity(nil, "app", "web"))
	tests := []struct {
		name string
		node *NodeInfo
		pod  *api.Pod
		want string
	}{
		{"empty node", placed(makeNode("n")), loner, ""},
		{"matching pod there", placed(makeNode("n"), web("a")), loner, mine},
		{"other labels", placed(makeNode("n"), makePod("a", podLabels("app", "db"))), loner, ""},
		{"other namespace", placed(makeNode("n"), func() *api.Pod { p := web("a"); p.Namespace = "other"; return p }()), loner, ""},
		{"namespaces named", placed(makeNode("n"), func() *api.Pod { p := web("a"); p.Namespace = "other"; return p }()),
			makePod("p", antiAffinity([]string{"other"}, "app", "web")), mine},
		{"no hostname label, no domain", placed(makeNode("n", noHostname), web("a")), loner, ""},
		{"existing pod repels", placed(makeNode("n"), makePod("a", antiAffinity(nil, "app", "web"))), web("p"), existing},
		{"existing pod, not selected", placed(makeNode("n"), makePod("a", antiAffinity(nil, "app", "web"))), makePod("p", podLabels("app", "db")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonsOf(interPodAffinity{}.Filter(nil, NewPodInfo(tt.pod), tt.node)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAntiAffinityMatchedOncePerCycle: with the placed pods' distinct terms
// matched once for the cycle (as Framework.Schedule prepares the pod), the
// filter answers on every node exactly as when it matches every placed
// pod's terms there, through pods placed and removed at random: terms
// naming other namespaces, selectors that select nothing, nodes without
// the topology label.
func TestAntiAffinityMatchedOncePerCycle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 17))
	apps := []string{"web", "db", "cache"}
	namespaces := []string{"default", "other"}
	randomPod := func(name string) *api.Pod {
		p := makePod(name, podLabels("app", apps[rng.IntN(len(apps))]))
		p.Namespace = namespaces[rng.IntN(len(namespaces))]
		switch rng.IntN(5) {
		case 0:
			antiAffinity(nil, "app", apps[rng.IntN(len(apps))])(p)
		case 1:
			antiAffinity([]string{namespaces[rng.IntN(len(namespaces))]}, "app", apps[rng.IntN(len(apps))])(p)
		case 2:
			antiAffinity(nil)(p) // an empty selector: every pod of the namespace
		}
		return p
	}
	checked, refused := 0, 0
	for round := range 40 {
		var nodes []*api.Node
		for i := range 6 {
			if i == 5 {
				nodes = append(nodes, makeNode(fmt.Sprintf("n%d", i), noHostname))
			} else {
				nodes = append(nodes, makeNode(fmt.Sprintf("n%d", i)))
			}
		}
		// The same pods on two Nodes: one never counts labels, the other
		// counts them from the start in even rounds, and from after the
		// pods came and went in odd ones.
		ns, plain := NewNodes(nodes...), NewNodes(nodes...)
		if round%2 == 0 {
			ns.countPodLabels()
		}
		type placement struct {
			node, plain *NodeInfo
			pod, same   *placedPod
		}
		var placedPods []placement
		for i := range 25 {
			info := NewPodInfo(randomPod(fmt.Sprintf("r%d-p%d", round, i)))
			name := nodes[rng.IntN(len(nodes))].Name
			p, same := info.placed(), info.placed()
			placedPods = append(placedPods, placement{ns.AddPod(name, p), plain.AddPod(name, same), p, same})
		}
		for range 8 {
			i := rng.IntN(len(placedPods))
			if !ns.RemovePod(placedPods[i].node, placedPods[i].pod) || !plain.RemovePod(placedPods[i].plain, placedPods[i].same) {
				t.Fatal("placed pod not removed")
			}
			placedPods = slices.Delete(placedPods, i, i+1)
		}
		ns.countPodLabels()
		for j := range 15 {
			pod := NewPodInfo(randomPod(fmt.Sprintf("r%d-in%d", round, j)))
			var each []string
			for k, n := range ns.List() {
				got := reasonsOf(interPodAffinity{}.Filter(nil, pod, n))
				if uncounted := reasonsOf(interPodAffinity{}.Filter(nil, pod, plain.List()[k])); got != uncounted {
					t.Fatalf("round %d, pod %d, node %s: %q with label counts, %q without", round, j, n.name, got, uncounted)
				}
				each = append(each, got)
			}
			state := NewCycleState(ns)
			if err := (interPodAffinity{}).PreFilter(state, pod); err != nil {
				t.Fatal(err)
			}
			for k, n := range ns.List() {
				got := reasonsOf(interPodAffinity{}.Filter(state, pod, n))
				if got != each[k] {
					t.Fatalf("round %d, pod %d, node %s: %q matched once per cycle, %q pod by pod", round, j, n.name, got, each[k])
				}
				checked++
				if got != "" {
					refused++
				}
			}
		}
	}
	if refused == 0 || refused == checked {
		t.Fatalf("%d of %d answers refused: the cases do not exercise the filter", refused, checked)
	}
}

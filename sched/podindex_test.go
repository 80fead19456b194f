package sched

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// TestPodCountsFollowChanges: the counts per node and domain of pods a
// selector selects, and of the placed pods' scoring terms, stay what
// counting every node's pods again finds, through pods placed and taken
// off (terminating ones among them), pods on nodes not listed yet, and
// nodes that come, go, lose their hostname or change zones.
func TestPodCountsFollowChanges(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			checkPodCounts(t, seed)
		})
	}
}

func checkPodCounts(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	ns := NewNodes()
	node := func(name string) *api.Node {
		n := makeNode(name)
		switch rng.IntN(5) {
		case 0:
			delete(n.Labels, api.LabelHostname)
		case 1:
		default:
			n.Labels[api.LabelTopologyZone] = pick("a", "b", "c", "")
		}
		n.Labels["rack"] = pick("r1", "r2")
		return n
	}
	names := make([]string, 24)
	for i := range names {
		names[i] = fmt.Sprintf("n%02d", i)
		if i < 16 {
			ns.Set(node(names[i]))
		}
	}
	selectors := []string{"app=x", "app=y", "app in (x,y)", "app=x,tier=web", "tier"}
	ask := func() {
		for _, namespace := range []string{"default", "other"} {
			for _, s := range selectors {
				sel, err := labels.Parse(s)
				if err != nil {
					t.Fatal(err)
				}
				for _, terminating := range []bool{false, true} {
					pc := ns.podCount(namespace, sel, selectorKey(sel), terminating)
					pc.key(ns, api.LabelTopologyZone)
					pc.key(ns, "rack")
				}
			}
		}
		ns.keyCount(api.LabelTopologyZone)
		ns.keyCount("rack")
	}
	var placed []*placedPod
	for step := range 600 {
		switch r := rng.IntN(100); {
		case r < 55:
			p := makePod(fmt.Sprint("p", step), podLabels("app", pick("x", "y", "z"), "tier", pick("web", "db")))
			p.Namespace = pick("default", "other")
			p.UID = types.UID(p.Name)
			if rng.IntN(5) == 0 {
				now := metav1.Now()
				p.DeletionTimestamp = &now
			}
			if rng.IntN(3) == 0 {
				p.Spec.Affinity = &api.Affinity{PodAntiAffinity: &api.PodAntiAffinity{
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
						Weight: int32(1 + rng.IntN(2)), PodAffinityTerm: corev1.PodAffinityTerm{
							LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}},
							TopologyKey:   pick(api.LabelHostname, api.LabelTopologyZone),
						},
					}},
				}}
			}
			pp := NewPodInfo(p).placed()
			pp.node = ns.AddPod(names[rng.IntN(len(names))], pp)
			placed = append(placed, pp)
		case r < 80 && len(placed) > 0:
			i := rng.IntN(len(placed))
			ns.RemovePod(placed[i].node, placed[i])
			placed = slices.Delete(placed, i, i+1)
		case r < 95:
			ns.Set(node(names[rng.IntN(len(names))]))
		default:
			ns.Remove(names[rng.IntN(len(names))])
		}
		if step == 100 {
			ask() // counted from here on, and kept
		}
		if step > 100 && step%25 == 0 {
			verifyPodCounts(t, ns)
		}
	}
	verifyPodCounts(t, ns)
}

// verifyPodCounts counts again what the Nodes keep counted.
func verifyPodCounts(t *testing.T, ns *Nodes) {
	t.Helper()
	check := func(what string, dc *domainCounter, holds func(*placedPod) bool) {
		t.Helper()
		want := make([]int32, ns.slots)
		for _, n := range ns.byName {
			for _, p := range n.pods {
				if holds(p) {
					want[n.index]++
				}
			}
		}
		got := append(slices.Clone(dc.perNode), make([]int32, int(ns.slots)-len(dc.perNode))...)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: per node %v, want %v", what, got, want)
		}
		hosts, with := map[int32]int32{}, int32(0)
		keys := map[string]map[string]int64{}
		for key := range dc.keys {
			keys[key] = map[string]int64{}
		}
		for _, n := range ns.list {
			c := want[n.index]
			if c > 0 && n.flags&flagHostname != 0 {
				hosts[c]++
				with++
			}
			for key, values := range keys {
				if v, ok := n.labels[key]; ok && c > 0 {
					values[v] += int64(c)
				}
			}
		}
		gotHosts := map[int32]int32{}
		for c, k := range dc.hosts {
			if k != 0 {
				gotHosts[int32(c)] = k
			}
		}
		if !maps.Equal(gotHosts, hosts) || dc.hostsWith != with {
			t.Fatalf("%s: hosts %v (%d), want %v (%d)", what, gotHosts, dc.hostsWith, hosts, with)
		}
		for key, values := range keys {
			if !maps.Equal(dc.keys[key], values) {
				t.Fatalf("%s: by %s %v, want %v", what, key, dc.keys[key], values)
			}
		}
	}
	for key, pc := range ns.podCounts {
		check(fmt.Sprint(key), &pc.domainCounter, func(p *placedPod) bool {
			return p.Namespace == key.namespace && (key.terminating || !p.Terminating) && pc.selector.Matches(labels.Set(p.Labels))
		})
	}
	for key, pt := range ns.scoreTerms {
		holds := func(p *placedPod) bool {
			found := false
			p.interPodTerms.eachScoreTerm(func(k string, _ int64, _ *affinityTerm) { found = found || k == key })
			return found
		}
		check("score term "+key, &pt.domainCounter, holds)
	}
	hostNodes := 0
	for _, n := range ns.list {
		if n.flags&flagHostname != 0 {
			hostNodes++
		}
	}
	if ns.hostNodes != hostNodes {
		t.Fatalf("host nodes %d, want %d", ns.hostNodes, hostNodes)
	}
	for key, values := range ns.keyDomains {
		want, nodes := map[string]int32{}, 0
		for _, n := range ns.list {
			if v, ok := n.labels[key]; ok {
				want[v]++
				nodes++
			}
		}
		if !maps.Equal(values, want) || ns.keyNodes[key] != nodes {
			t.Fatalf("nodes by %s: %v (%d), want %v (%d)", key, values, ns.keyNodes[key], want, nodes)
		}
	}
}

// TestPodCountsBounded: past maxPodCounts selectors, the one asked for
// least recently is dropped, and a pod placed after counts in the rest.
func TestPodCountsBounded(t *testing.T) {
	ns := NewNodes(makeNode("n1"))
	var first *podCount
	for i := range maxPodCounts + 1 {
		sel := labels.SelectorFromSet(labels.Set{"app": fmt.Sprint(i)})
		pc := ns.podCount("default", sel, selectorKey(sel), false)
		if i == 0 {
			first = pc
		}
	}
	if len(ns.podCounts) != maxPodCounts || slices.Contains(ns.nsCounts["default"], first) {
		t.Fatalf("%d counts kept, the oldest among them: %v", len(ns.podCounts), slices.Contains(ns.nsCounts["default"], first))
	}
	p := NewPodInfo(makePod("p", podLabels("app", "1")))
	ns.AddPod("n1", p.placed())
	sel := labels.SelectorFromSet(labels.Set{"app": "1"})
	if pc := ns.podCount("default", sel, selectorKey(sel), false); pc.at(ns.Get("n1")) != 1 || first.at(ns.Get("n1")) != 0 {
		t.Fatalf("counts after a pod: %d, dropped %d", pc.at(ns.Get("n1")), first.at(ns.Get("n1")))
	}
}

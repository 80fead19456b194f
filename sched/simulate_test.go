package sched

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store/storetest"
)

// A simulation counts the snapshot's plain bound pods without a record
// each until a pod reads the placed pods one by one (or could preempt
// them), and places every pod, takes pods off and sums every node as one
// that recorded them all from the start.
func TestSimulationPlainPods(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			checkSimulationPlainPods(t, seed)
		})
	}
}

func checkSimulationPlainPods(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	s := storetest.NewMemory(t)
	const nodes = 12
	for i := range nodes {
		create(t, s, makeNode(fmt.Sprintf("node-%02d", i),
			allocatable(fmt.Sprintf("%dm", 2000*(1+rng.IntN(4))), fmt.Sprintf("%dGi", 4*(1+rng.IntN(4))), 40),
			nodeLabels(api.LabelTopologyZone, pick("a", "b", "c"))))
	}
	recorded := 0
	var bound []string
	for i := range 150 {
		opts := []func(*api.Pod){requests(pick("", "100m", "250m"), pick("", "64Mi", "256Mi"))}
		if rng.IntN(5) < 4 {
			opts = append(opts, ownedBy(fmt.Sprint("rs", rng.IntN(5))))
		}
		if rng.IntN(10) == 0 {
			opts = append(opts, ports(api.ContainerPort{ContainerPort: 9000, HostPort: int32(9000 + rng.IntN(3))}))
		}
		if rng.IntN(10) == 0 {
			opts = append(opts, podLabels("app", "db"), antiAffinity(nil, "app", "db"))
			recorded++
		} else {
			opts = append(opts, podLabels("app", pick("web", "db")))
		}
		p := makePod(fmt.Sprintf("bound-%03d", i), opts...)
		p.Spec.NodeName = fmt.Sprintf("node-%02d", rng.IntN(nodes))
		create(t, s, p)
		bound = append(bound, p.Name)
	}
	snap := s.Snapshot()
	lazy, err := NewSimulation(snap, FrameworkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eager, err := NewSimulation(snap, FrameworkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := eager.record(); err != nil {
		t.Fatal(err)
	}
	if got := len(lazy.cache.pods); got != recorded {
		t.Fatalf("the simulation recorded %d pods at first, want the %d with anti-affinity", got, recorded)
	}
	if got := len(eager.cache.pods); got != len(bound) {
		t.Fatalf("the recording simulation has %d pods, want %d", got, len(bound))
	}

	spread := func(p *api.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: api.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}}
	}
	for i := range 200 {
		if rng.IntN(6) == 0 {
			obj, err := snap.Get(podKind, "default", bound[rng.IntN(len(bound))])
			if err != nil {
				t.Fatal(err)
			}
			lazy.Remove(obj.(*api.Pod))
			eager.Remove(obj.(*api.Pod))
			continue
		}
		opts := []func(*api.Pod){requests(pick("100m", "500m", "1"), pick("128Mi", "1Gi")), ownedBy(fmt.Sprint("rs", rng.IntN(7)))}
		if rng.IntN(20) == 0 {
			opts = append(opts, ports(api.ContainerPort{ContainerPort: 9000, HostPort: int32(9000 + rng.IntN(3))}))
		}
		if i > 120 {
			// Pods that read the placed pods one by one.
			switch rng.IntN(4) {
			case 0:
				opts = append(opts, podLabels("app", "web"), spread)
			case 1:
				opts = append(opts, podLabels("app", "db"), antiAffinity(nil, "app", "db"))
			}
		}
		p := makePod(fmt.Sprintf("new-%03d", i), opts...)
		api.Default(p)
		n1, err1 := lazy.Place(p)
		n2, err2 := eager.Place(p)
		if n1 != n2 || fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("pod %s: placed on %q (%v), recording all: %q (%v)", p.Name, n1, err1, n2, err2)
		}
	}
	if lazy.base != nil {
		t.Fatal("no pod read the placed pods: the test does not reach the recording")
	}
	for _, n := range eager.Nodes() {
		l := lazy.cache.nodes.Get(n.name)
		if l.Requested != n.Requested || l.NonZeroCPU != n.NonZeroCPU || l.NonZeroMemory != n.NonZeroMemory ||
			len(l.pods) != len(n.pods) || l.flags != n.flags {
			t.Errorf("node %s: requested %+v (%d pods, flags %b), recording all: %+v (%d pods, flags %b)",
				n.name, l.Requested, len(l.pods), l.flags, n.Requested, len(n.pods), n.flags)
		}
		lp, ep := slices.Clone(l.ports), slices.Clone(n.ports)
		byPort := func(a, b HostPort) int { return int(a.Port - b.Port) }
		slices.SortFunc(lp, byPort)
		slices.SortFunc(ep, byPort)
		if !slices.Equal(lp, ep) {
			t.Errorf("node %s: ports %v, recording all: %v", n.name, lp, ep)
		}
	}
	for owner, col := range eager.cache.nodes.spread {
		got := lazy.cache.nodes.spread[owner]
		if got == nil || got.total != col.total || !slices.Equal(trimZeros(got.counts), trimZeros(col.counts)) ||
			!slices.Equal(trimZeros(got.zones), trimZeros(col.zones)) {
			t.Errorf("owner %d: counts %+v, recording all: %+v", owner, got, col)
		}
	}
	if len(lazy.cache.nodes.spread) != len(eager.cache.nodes.spread) {
		t.Errorf("%d owners counted, recording all: %d", len(lazy.cache.nodes.spread), len(eager.cache.nodes.spread))
	}
}

func trimZeros(s []int32) []int32 {
	for len(s) > 0 && s[len(s)-1] == 0 {
		s = s[:len(s)-1]
	}
	return s
}

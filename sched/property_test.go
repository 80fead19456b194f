package sched

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

// Random clusters and random pods through the real Scheduler over a real
// store. At rest: no node's bound requests exceed its allocatable, no pod
// is bound where the filters reject it, every pod left pending is rejected
// by every node, and the cache counts what the store holds.
func TestPropertyRandomClusters(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			checkRandomCluster(t, seed)
		})
	}
}

func checkRandomCluster(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	s := storetest.NewMemory(t)
	for i := range 10 + rng.IntN(30) {
		opts := []func(*api.Node){
			allocatable(fmt.Sprintf("%dm", 500*(1+rng.IntN(16))), fmt.Sprintf("%dMi", 512*(1+rng.IntN(32))), 3+rng.IntN(12)),
			nodeLabels("zone", pick("a", "b", "c")),
		}
		if rng.IntN(2) == 0 {
			opts = append(opts, nodeLabels("disk", "ssd"))
		}
		switch r := rng.IntN(100); {
		case r < 15:
			opts = append(opts, taints(taint("dedicated", "db", api.TaintEffectNoSchedule)))
		case r < 25:
			opts = append(opts, taints(taint("soft", "", api.TaintEffectPreferNoSchedule)))
		case r < 32:
			opts = append(opts, cordoned)
		case r < 37:
			opts = append(opts, condition(api.NodeReady, api.ConditionFalse))
		case r < 42:
			opts = append(opts, condition(api.NodeMemoryPressure, api.ConditionTrue))
		}
		create(t, s, makeNode(fmt.Sprintf("node-%02d", i), opts...))
	}
	clk := testingclock.NewFakeClock(time.Now())
	sc := start(t, s, Options{Clock: clk, Seed: int64(seed)})

	var pods []*api.Pod
	for i := range 100 + rng.IntN(200) {
		opts := []func(*api.Pod){requests(pick("", "100m", "250m", "500m", "1", "1500m"), pick("", "64Mi", "256Mi", "1Gi", "2Gi"))}
		if rng.IntN(5) < 4 {
			opts = append(opts, ownedBy(fmt.Sprint("rs", rng.IntN(5))))
		}
		switch r := rng.IntN(100); {
		case r < 20:
			opts = append(opts, selector("zone", pick("a", "b", "c")))
		case r < 30:
			opts = append(opts, requiredTerms(api.NodeSelectorTerm{MatchExpressions: []api.NodeSelectorRequirement{
				expr("disk", api.NodeSelectorOpExists), expr("zone", api.NodeSelectorOpNotIn, pick("a", "b"))}}))
		}
		if rng.IntN(100) < 15 {
			opts = append(opts, tolerate(api.Toleration{Key: "dedicated", Operator: api.TolerationOpExists}))
		}
		if rng.IntN(100) < 10 {
			opts = append(opts, ports(api.ContainerPort{ContainerPort: int32(8080 + rng.IntN(2))}))
		}
		if rng.IntN(100) < 10 {
			opts = append(opts, podLabels("app", "db"), antiAffinity(nil, "app", "db"))
		}
		pods = append(pods, makePod(fmt.Sprintf("pod-%03d", i), opts...))
	}
	// Created in transactions of 25, as a controller creates them.
	for lo := 0; lo < len(pods); lo += 25 {
		_, err := s.Txn(context.Background(), func(tx *store.Txn) error {
			for _, p := range pods[lo:min(lo+25, len(pods))] {
				api.Default(p)
				if _, err := tx.Create(p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Delete a tenth, bound or not, to free room while pods are pending.
	zero := int64(0)
	var deleted []types.UID
	for _, p := range pods {
		if rng.IntN(10) == 0 {
			if _, err := s.Delete(context.Background(), podKind, "default", p.Name, store.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				t.Fatal(err)
			}
			deleted = append(deleted, p.UID)
		}
	}

	// At rest: the queue is idle, every pod is bound or says why not, and
	// the cache has seen every deletion and binding. The fake clock jumps
	// ahead so back-offs end at once.
	waitFor(t, func() bool {
		clk.Step(time.Second)
		st := sc.Stats()
		if st.Active+st.Backoff+st.InFlight > 0 {
			return false
		}
		gone := true
		sc.cache.locked(func() {
			for _, uid := range deleted {
				gone = gone && sc.cache.pods[uid] == nil
			}
		})
		if !gone {
			return false
		}
		objs, _, _ := s.List(podKind, store.Filter{})
		for _, o := range objs {
			p := o.(*api.Pod)
			if p.Spec.NodeName == "" && scheduledCondition(p) == nil {
				return false
			}
			if p.Spec.NodeName != "" && !confirmed(sc, p) {
				return false
			}
		}
		return true
	})

	nodeObjs, _, _ := s.List(nodeKind, store.Filter{})
	podObjs, _, _ := s.List(podKind, store.Filter{})
	infos := map[string]*NodeInfo{}
	var nodes []*NodeInfo
	for _, o := range nodeObjs {
		n := NewNodeInfo(o.(*api.Node))
		infos[n.Name()] = n
		nodes = append(nodes, n)
	}
	var bound, pending []*PodInfo
	placed := map[*PodInfo]*placedPod{}
	for _, o := range podObjs {
		p := NewPodInfo(o.(*api.Pod))
		if name := p.Pod.Spec.NodeName; name != "" {
			placed[p] = p.placed()
			infos[name].addPod(placed[p])
			bound = append(bound, p)
		} else {
			pending = append(pending, p)
		}
	}
	fw := NewFramework(FrameworkOptions{})
	for _, n := range nodes {
		a, r := n.Allocatable, n.Requested
		if r.MilliCPU > a.MilliCPU || r.Memory > a.Memory || r.Pods > a.Pods {
			t.Errorf("%s over-committed: requested %+v, allocatable %+v", n.Name(), r, a)
		}
		var cached Resources
		sc.cache.locked(func() { cached = sc.cache.nodes.Get(n.Name()).Requested })
		if cached != r {
			t.Errorf("%s: cache counts %+v, store holds %+v", n.Name(), cached, r)
		}
	}
	for _, p := range bound {
		n := infos[p.Pod.Spec.NodeName]
		n.removePod(placed[p])
		if st := fw.Filter(p, n); st != nil {
			t.Errorf("%s bound to %s, which rejects it: %v", p.Key, n.Name(), st)
		}
		n.addPod(placed[p])
	}
	for _, p := range pending {
		for _, n := range nodes {
			if fw.Filter(p, n) == nil {
				t.Errorf("%s pending, but %s would take it (%s)", p.Key, n.Name(), scheduledCondition(p.Pod).Message)
			}
		}
	}
	t.Logf("%d nodes, %d pods bound, %d pending, %d deleted", len(nodes), len(bound), len(pending), len(deleted))
}

// confirmed reports whether the cache counts a bound pod where the store
// has it, as bound rather than assumed.
func confirmed(sc *Scheduler, p *api.Pod) (ok bool) {
	sc.cache.locked(func() {
		pp := sc.cache.pods[p.UID]
		ok = pp != nil && pp.attempt == nil && pp.node.Name() == p.Spec.NodeName
	})
	return ok
}

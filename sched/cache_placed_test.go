package sched

import (
	"testing"

	"github.com/berth-dev/berth/api"
)

// Once the watch shows an assumed pod bound, the cache keeps only what it
// reads of it (UID, namespace, labels, requests), neither the object nor
// the attempt that scheduled it, and still counts it once.
func TestCacheKeepsNoPlacedPod(t *testing.T) {
	pod := makePod("a", requests("1", ""))
	pod.Labels = map[string]string{"app": "web"}
	pod.Annotations = map[string]string{"big": "kept by the store, not by the cache"}
	c, bound := scheduleThenBind(t, pod, false)
	c.locked(func() {
		p := c.pods[pod.UID]
		if p == nil {
			t.Fatal("pod not placed")
		}
		if p.attempt != nil {
			t.Error("the cache keeps the attempt of a pod the watch shows bound")
		}
		if p.Namespace != pod.Namespace || p.UID != pod.UID || p.Labels["app"] != "web" || p.node.name != "n" {
			t.Errorf("placed pod %+v on %s", p.podFacts, p.node.name)
		}
		if r := c.nodes.Get("n").Requested; r.MilliCPU != 1000 || r.Pods != 1 {
			t.Errorf("requested %+v", r)
		}
	})
	// A later status change of the same pod places nothing again.
	c.setPod(bound.DeepCopy())
	c.locked(func() {
		if r := c.nodes.Get("n").Requested; r.MilliCPU != 1000 || r.Pods != 1 {
			t.Errorf("requested %+v after a second event", r)
		}
	})
}

// A pod whose binding is confirmed before the watch shows it bound lets
// go of its attempt at the confirmation, and the watch's event then
// places nothing again.
func TestCacheLetsGoOfConfirmedPod(t *testing.T) {
	pod := makePod("a", requests("1", ""))
	c, a := assume(t, pod)
	c.confirm(a)
	var placed *placedPod
	c.locked(func() {
		placed = c.pods[pod.UID]
		if placed == nil || placed.attempt != nil {
			t.Fatalf("placed %+v after the confirmation: want the pod's facts, not its attempt", placed)
		}
	})
	showBound(c, pod)
	c.locked(func() {
		if p := c.pods[pod.UID]; p != placed {
			t.Errorf("the watch's event placed the pod again")
		}
		if r := c.nodes.Get("n").Requested; r.MilliCPU != 1000 || r.Pods != 1 {
			t.Errorf("requested %+v", r)
		}
		if n := c.nodes.Get("n"); len(n.pods) != 1 || n.pods[0] != placed {
			t.Errorf("node holds %d pods", len(n.pods))
		}
	})
}

// A failed binding gives the room back, unless the watch has meanwhile
// shown the pod bound: then it stays as the watch saw it.
func TestCacheForget(t *testing.T) {
	for _, seen := range []bool{false, true} {
		pod := makePod("a", requests("1", ""))
		c, a := assume(t, pod)
		if seen {
			showBound(c, pod)
		}
		c.forget(a)
		want := int64(0)
		if seen {
			want = 1000
		}
		c.locked(func() {
			if r := c.nodes.Get("n").Requested; r.MilliCPU != want {
				t.Errorf("seen bound %v: requested %d after forget, want %d", seen, r.MilliCPU, want)
			}
		})
	}
}

// scheduleThenBind schedules pod on a cache of one node "n" (confirming
// the binding first when confirm is set), then shows the cache the pod
// bound, as the watch would, and returns the cache and that pod.
func scheduleThenBind(t *testing.T, pod *api.Pod, confirm bool) (*cache, *api.Pod) {
	t.Helper()
	c, a := assume(t, pod)
	if confirm {
		c.confirm(a)
	}
	return c, showBound(c, pod)
}

// assume schedules pod on a cache of one node "n", which assumes it there.
func assume(t *testing.T, pod *api.Pod) (*cache, *PodInfo) {
	t.Helper()
	c := newCache()
	c.setNode(makeNode("n", allocatable("2", "1Gi", 110)))
	a := NewPodInfo(pod)
	if _, err := c.schedule(NewFramework(FrameworkOptions{}), a); err != nil {
		t.Fatal(err)
	}
	return c, a
}

// showBound shows the cache pod bound to "n", as the watch would.
func showBound(c *cache, pod *api.Pod) *api.Pod {
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "n"
	c.setPod(bound)
	return bound
}

// A bound pod whose labels or controller change is counted again as it
// now is: other pods' anti-affinity reads its labels, spreading its
// owner.
func TestCacheFollowsLabelsAndOwner(t *testing.T) {
	pod := makePod("a", requests("1", ""), podLabels("app", "web"))
	c, bound := scheduleThenBind(t, pod, true)
	c.locked(func() { c.nodes.countPodLabels() }) // as a pod with anti-affinity would
	relabelled := bound.DeepCopy()
	relabelled.Labels = map[string]string{"app": "db"}
	c.setPod(relabelled)
	c.locked(func() {
		n := c.nodes.Get("n")
		if n.labelPods[podLabel{pod.Namespace, "app", "db"}] != 1 || n.labelPods[podLabel{pod.Namespace, "app", "web"}] != 0 {
			t.Errorf("label counts after relabelling: %v", n.labelPods)
		}
		if r := n.Requested; r.MilliCPU != 1000 || r.Pods != 1 {
			t.Errorf("requested %+v after relabelling", r)
		}
	})
	adopted := relabelled.DeepCopy()
	ownedBy("rs1")(adopted)
	c.setPod(adopted)
	c.locked(func() {
		owner := c.pods[pod.UID].Owner
		if owner == 0 {
			t.Fatal("the adopted pod has no owner in the cache")
		}
		if got := c.nodes.ownerCounts(owner); len(got) != 1 || got[0] != 1 {
			t.Errorf("owner column %v after adoption", got)
		}
	})
}

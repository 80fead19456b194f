package sched

import (
	"testing"

	"github.com/berth-dev/berth/api"
)

// Once the watch shows an assumed pod bound, the cache keeps only what it
// reads of it (UID, namespace, labels), not the object as it was
// scheduled, and still counts it once.
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
		if p.info.Pod != nil {
			t.Error("the cache keeps a pod object")
		}
		got := p.info
		if got.Key != pod.Namespace+"/a" || got.Namespace != pod.Namespace || got.UID != pod.UID || got.Labels["app"] != "web" || p.node.name != "n" {
			t.Errorf("placed pod %+v on %s", got, p.node.name)
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

// A pod whose binding is confirmed before the watch shows it bound is
// placed again from the watch too: the cache does not keep the object as
// it was scheduled.
func TestCacheLetsGoOfConfirmedPod(t *testing.T) {
	pod := makePod("a", requests("1", ""))
	c, _ := scheduleThenBind(t, pod, true)
	c.locked(func() {
		p := c.pods[pod.UID]
		if p == nil || p.info.Pod != nil || p.assumed {
			t.Fatalf("placed %+v: want a PodInfo without the pod, not assumed", p)
		}
		if r := c.nodes.Get("n").Requested; r.MilliCPU != 1000 || r.Pods != 1 {
			t.Errorf("requested %+v", r)
		}
	})
}

// scheduleThenBind schedules pod on a cache of one node "n" (confirming
// the binding first when confirm is set), then shows the cache the pod
// bound, as the watch would, and returns the cache and that pod.
func scheduleThenBind(t *testing.T, pod *api.Pod, confirm bool) (*cache, *api.Pod) {
	t.Helper()
	c := newCache()
	c.setNode(makeNode("n", allocatable("2", "1Gi", 110)))
	a := NewPodInfo(pod)
	if _, err := c.schedule(NewFramework(FrameworkOptions{}), a); err != nil {
		t.Fatal(err)
	}
	if confirm {
		c.confirm(a)
	}
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "n"
	c.setPod(bound)
	return c, bound
}

package sched

import (
	"testing"
)

// Once the watch shows an assumed pod bound, the cache keeps only the
// placed copy of it (identity, namespace, labels), not the object as it
// was scheduled, and still counts it once.
func TestCacheKeepsPlacedCopy(t *testing.T) {
	c := newCache()
	c.setNode(makeNode("n", allocatable("2", "1Gi", 110)))
	fw := NewFramework(FrameworkOptions{})
	pod := makePod("a", requests("1", ""))
	pod.Labels = map[string]string{"app": "web"}
	pod.Annotations = map[string]string{"big": "kept by the store, not by the cache"}
	a := NewPodInfo(pod)
	if _, err := c.schedule(fw, a); err != nil {
		t.Fatal(err)
	}
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "n"
	c.setPod(bound)
	c.locked(func() {
		p := c.pods[pod.UID]
		if p == nil {
			t.Fatal("pod not placed")
		}
		if p.info.Pod == pod || p.info.Pod == bound {
			t.Error("the cache keeps a whole pod object")
		}
		got := p.info.Pod
		if got.Name != "a" || got.Namespace != pod.Namespace || got.UID != pod.UID || got.Labels["app"] != "web" || got.Spec.NodeName != "n" || got.Annotations != nil {
			t.Errorf("placed copy %+v", got)
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

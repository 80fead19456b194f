package sched

import (
	"errors"
	"testing"

	"github.com/berth-dev/berth/api"
)

// An assumed pod holds its room at once: the next pod sees the node full
// before the first binding is written.
func TestCacheAssume(t *testing.T) {
	c := newCache()
	c.setNode(makeNode("n", allocatable("1", "1Gi", 110)))
	fw := NewFramework(FrameworkOptions{})
	requested := func() (r Resources) {
		c.locked(func() { r = c.nodes.Get("n").Requested })
		return r
	}

	a := NewPodInfo(makePod("a", requests("1", "")))
	if res, err := c.schedule(fw, a); err != nil || res.Node != "n" {
		t.Fatalf("a: %+v, %v", res, err)
	}
	b := NewPodInfo(makePod("b", requests("1", "")))
	_, err := c.schedule(fw, b)
	if err == nil || err.Error() != "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod." {
		t.Fatalf("b: %v", err)
	}
	if _, err := c.schedule(fw, a); !errors.Is(err, errPlaced) {
		t.Fatalf("a again: %v", err)
	}
	// The binding failed: forgetting a frees the room for b.
	c.forget(a)
	if res, err := c.schedule(fw, b); err != nil || res.Node != "n" {
		t.Fatalf("b after forget: %+v, %v", res, err)
	}
	// The watch sees b bound: confirmed, still counted once.
	bound := makePod("b", requests("1", ""))
	bound.Spec.NodeName = "n"
	c.setPod(bound)
	c.forget(b) // a late failure report does not undo a confirmed pod
	if r := requested(); r.MilliCPU != 1000 || r.Pods != 1 {
		t.Fatalf("requested %+v", r)
	}
	// Deleted: room again.
	c.removePod(bound.UID)
	if r := requested(); r != (Resources{}) {
		t.Fatalf("requested %+v after delete", r)
	}
}

func TestCacheNodes(t *testing.T) {
	c := newCache()
	// A pod bound to a node the cache has not seen yet is counted there.
	p := makePod("a", requests("1", ""))
	p.Spec.NodeName = "n"
	c.setPod(p)
	c.locked(func() {
		if len(c.nodes.List()) != 0 {
			t.Fatal("a node without a Node object is listed")
		}
	})
	c.setNode(makeNode("n"))
	c.locked(func() {
		if l := c.nodes.List(); len(l) != 1 || l[0].Requested.MilliCPU != 1000 {
			t.Fatalf("nodes %v", l)
		}
	})
	c.removeNode("n")
	c.locked(func() {
		if len(c.nodes.List()) != 0 || c.nodes.Get("n") == nil {
			t.Fatal("a deleted node with pods should leave the list but keep its pods")
		}
	})
	c.removePod(p.UID)
	c.locked(func() {
		if c.nodes.Get("n") != nil {
			t.Error("an empty deleted node should be dropped")
		}
	})
}

// Heartbeats must not send every unschedulable pod back.
func TestSchedulingChanged(t *testing.T) {
	base := makeNode("n")
	heartbeat := makeNode("n")
	heartbeat.Status.Conditions[0].Message = "kubelet is posting ready status"
	if schedulingChanged(base, heartbeat) {
		t.Error("a heartbeat should not count as a change")
	}
	for name, changed := range map[string]*api.Node{
		"labels":      makeNode("n", nodeLabels("disk", "ssd")),
		"taints":      makeNode("n", taints(taint("a", "", api.TaintEffectNoSchedule))),
		"cordon":      makeNode("n", cordoned),
		"allocatable": makeNode("n", allocatable("8", "1Gi", 10)),
		"ready":       makeNode("n", condition(api.NodeReady, api.ConditionFalse)),
	} {
		if !schedulingChanged(base, changed) {
			t.Errorf("%s change not reported", name)
		}
	}
}

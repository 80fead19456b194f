package sched

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A CycleState keeps each key's data apart, shows nothing of an earlier
// attempt to Read, and hands it back once to Reuse.
func TestCycleStateKeys(t *testing.T) {
	a, b := NewStateKey("a"), NewStateKey("a")
	if a == b {
		t.Fatal("two keys of one name are one key")
	}
	s := NewCycleState(nil)
	if s.Read(a) != nil || (*CycleState)(nil).Read(a) != nil {
		t.Fatal("an empty state holds data")
	}
	s.Write(b, 2)
	s.Write(a, 1)
	if s.Read(a) != 1 || s.Read(b) != 2 {
		t.Fatalf("read %v, %v; want 1, 2", s.Read(a), s.Read(b))
	}
	nodes := NewNodes()
	s.reset(nodes)
	if s.Read(a) != nil || s.Nodes() != nodes {
		t.Fatalf("after reset: read %v, nodes %p; want nil, %p", s.Read(a), s.Nodes(), nodes)
	}
	if got := s.Reuse(a); got != 1 {
		t.Fatalf("reuse %v, want 1", got)
	}
	if got := s.Reuse(a); got != nil {
		t.Fatalf("reused twice: %v", got)
	}
}

// An attempt's state does not reach the next: a pod whose DoNotSchedule
// constraint rules out a node, then one without constraints, which the
// first pod's counts must not turn away; and Filter outside a cycle
// decides from the node alone.
func TestCycleStateDoesNotLeak(t *testing.T) {
	nodes := cluster(
		on(makeNode("a", zoned("z1")), makePod("a1", podLabels("app", "web"))),
		on(makeNode("b", zoned("z2"))),
	)
	fw := NewFramework(FrameworkOptions{})
	spread := NewPodInfo(makePod("p", podLabels("app", "web"), spreadBy(zoneKey, 1, corev1.DoNotSchedule)))
	sts, err := fw.Explain(spread, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if reasonsOf(sts[0]) == "" || sts[1] != nil {
		t.Fatalf("spread pod: a %v, b %v; want a rejected, b fits", sts[0], sts[1])
	}
	if fw.state.Read(spreadFilterKey) != nil || fw.state.Nodes() != nil {
		t.Fatal("the attempt's state outlived it")
	}
	plain := NewPodInfo(makePod("q", podLabels("app", "web")))
	if sts, err = fw.Explain(plain, nodes); err != nil || sts[0] != nil || sts[1] != nil {
		t.Fatalf("plain pod after a spread one: %v, %v", sts, err)
	}
	// Outside a cycle there are no counts: only the topology label counts.
	if st := fw.Filter(spread, nodes.Get("a")); st != nil {
		t.Fatalf("single-node check of a labelled node: %v", st)
	}
	if st := fw.Filter(spread, NewNodeInfo(makeNode("c"))); reasonsOf(st) == "" {
		t.Fatal("a node without the zone label passed the spread filter")
	}
}

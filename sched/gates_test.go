package sched

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store/storetest"
)

func gates(names ...string) func(*api.Pod) {
	return func(p *api.Pod) {
		for _, n := range names {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
		}
	}
}

// A pod with scheduling gates is never tried: it says SchedulingGated in
// Kubernetes' words until its last gate goes, and is placed then.
func TestSchedulingGates(t *testing.T) {
	s := storetest.NewMemory(t)
	create(t, s, makeNode("n1"))
	sc := start(t, s, Options{})
	create(t, s, makePod("held", gates("example.com/a", "example.com/b")))
	pod := waitPod(t, s, "held", func(p *api.Pod) bool { return scheduledCondition(p) != nil })
	if c := scheduledCondition(pod); c.Status != api.ConditionFalse || c.Reason != api.PodReasonSchedulingGated ||
		c.Message != "Scheduling is blocked due to non-empty scheduling gates" || pod.Spec.NodeName != "" {
		t.Fatalf("node %q, condition %+v", pod.Spec.NodeName, c)
	}

	ungate := func(keep ...string) {
		t.Helper()
		p := getPod(t, s, "held").DeepCopy()
		p.Spec.SchedulingGates = nil
		gates(keep...)(p)
		if _, err := s.Update(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	ungate("example.com/b")
	// Another pod, ungated, is placed: the scheduler is running and has
	// seen the change, and still leaves the gated one alone.
	create(t, s, makePod("free"))
	waitPod(t, s, "free", boundTo("n1"))
	if pod := getPod(t, s, "held"); pod.Spec.NodeName != "" || scheduledCondition(pod).Reason != api.PodReasonSchedulingGated {
		t.Fatalf("with a gate left: node %q, condition %+v", pod.Spec.NodeName, scheduledCondition(pod))
	}
	if st := sc.Stats(); st.Attempts != 1 {
		t.Errorf("attempts %d, want 1 (the free pod's)", st.Attempts)
	}

	ungate()
	pod = waitPod(t, s, "held", boundTo("n1"))
	if c := scheduledCondition(pod); c.Status != api.ConditionTrue || c.Reason != "" {
		t.Errorf("condition %+v", c)
	}
}

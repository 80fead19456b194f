package sched

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

// start runs a scheduler until the test ends (before the store closes).
func start(t testing.TB, s *store.Store, opts Options) *Scheduler {
	t.Helper()
	sc := New(s, opts)
	testtool.Run(t, "Run", sc.Run)
	return sc
}

func create(t testing.TB, s *store.Store, objs ...api.Object) {
	t.Helper()
	for _, o := range objs {
		api.Default(o)
		if _, err := s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func getPod(t testing.TB, s *store.Store, name string) *api.Pod {
	t.Helper()
	obj, err := s.Get(podKind, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*api.Pod)
}

// waitPod polls the pod until cond holds, and returns it.
func waitPod(t *testing.T, s *store.Store, name string, cond func(*api.Pod) bool) *api.Pod {
	t.Helper()
	var pod *api.Pod
	waitFor(t, func() bool {
		pod = getPod(t, s, name)
		return cond(pod)
	})
	return pod
}

func scheduledCondition(pod *api.Pod) *api.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == api.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func boundTo(node string) func(*api.Pod) bool {
	return func(p *api.Pod) bool { return p.Spec.NodeName == node }
}

// A pod whose selector no node matches stays Pending with kube-scheduler's
// message; a matching node added later takes it.
func TestPendingUntilANodeMatches(t *testing.T) {
	s := storetest.NewMemory(t)
	create(t, s, makeNode("n1"), makeNode("n2"))
	rec := &recorder{}
	start(t, s, Options{Events: rec})
	create(t, s, makePod("web", selector("disk", "ssd"), requests("100m", "64Mi")))

	const want = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	pod := waitPod(t, s, "web", func(p *api.Pod) bool { return scheduledCondition(p) != nil })
	c := scheduledCondition(pod)
	if pod.Spec.NodeName != "" || c.Status != api.ConditionFalse || c.Reason != api.PodReasonUnschedulable || c.Message != want {
		t.Fatalf("node %q, condition %+v", pod.Spec.NodeName, c)
	}

	create(t, s, makeNode("n3", nodeLabels("disk", "ssd")))
	pod = waitPod(t, s, "web", boundTo("n3"))
	if c := scheduledCondition(pod); c == nil || c.Status != api.ConditionTrue || c.Reason != "" || c.Message != "" {
		t.Errorf("condition %+v", c)
	}
	waitFor(t, func() bool { return rec.has(EventScheduled, "Successfully assigned default/web to n3") })
	if !rec.has(EventFailedScheduling, want) {
		t.Errorf("events %v", rec.all())
	}
}

// A pod deleted from a full node makes room for an unschedulable one.
func TestRoomFreedByDelete(t *testing.T) {
	s := storetest.NewMemory(t)
	create(t, s, makeNode("n", allocatable("1", "1Gi", 110)))
	start(t, s, Options{})
	create(t, s, makePod("a", requests("1", "")))
	waitPod(t, s, "a", boundTo("n"))
	create(t, s, makePod("b", requests("1", "")))
	b := waitPod(t, s, "b", func(p *api.Pod) bool { return scheduledCondition(p) != nil })
	if c := scheduledCondition(b); c.Message != "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod." {
		t.Fatalf("condition %+v", c)
	}
	zero := int64(0)
	if _, err := s.Delete(context.Background(), podKind, "default", "a", store.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s, "b", boundTo("n"))
}

// Pods that name their node, ask for another scheduler, or are being
// deleted are left alone.
func TestPodsNotOurs(t *testing.T) {
	s := storetest.NewMemory(t)
	create(t, s, makeNode("n1"), makeNode("n2"))
	sc := start(t, s, Options{})
	create(t, s,
		makePod("named", func(p *api.Pod) { p.Spec.NodeName = "n2" }),
		makePod("other", func(p *api.Pod) { p.Spec.SchedulerName = "other-scheduler" }),
	)
	// Created and marked for deletion in one transaction, so the
	// scheduler never sees it alive.
	_, err := s.Txn(context.Background(), func(tx *store.Txn) error {
		if _, err := tx.Create(makePod("finalized", func(p *api.Pod) { p.Finalizers = []string{"example.com/hold"} })); err != nil {
			return err
		}
		_, err := tx.Delete(podKind, "default", "finalized", store.DeleteOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A pod created after them is bound once they have been seen.
	create(t, s, makePod("last"))
	waitPod(t, s, "last", func(p *api.Pod) bool { return p.Spec.NodeName != "" })
	for _, name := range []string{"other", "finalized"} {
		if p := getPod(t, s, name); p.Spec.NodeName != "" || len(p.Status.Conditions) != 0 {
			t.Errorf("%s was touched: %q %v", name, p.Spec.NodeName, p.Status.Conditions)
		}
	}
	if p := getPod(t, s, "named"); p.Spec.NodeName != "n2" || len(p.Status.Conditions) != 0 {
		t.Errorf("named was touched: %q %v", p.Spec.NodeName, p.Status.Conditions)
	}
	// named counts on n2: one pod there.
	var pods int64
	sc.cache.locked(func() { pods = sc.cache.nodes.Get("n2").Requested.Pods + sc.cache.nodes.Get("n1").Requested.Pods })
	if pods != 2 {
		t.Errorf("cache counts %d pods, want 2 (named and last)", pods)
	}
}

// Retrying an unschedulable pod rewrites its condition only when the
// message changes, and keeps the transition time while it stays False.
func TestUnschedulableConditionWrites(t *testing.T) {
	s := storetest.NewMemory(t)
	create(t, s, makeNode("n1"))
	// One binder writes in submission order, so a later binding proves an
	// earlier condition was handled.
	sc := start(t, s, Options{Binders: 1})
	create(t, s, makePod("p", selector("disk", "ssd")))
	p := waitPod(t, s, "p", func(p *api.Pod) bool { return scheduledCondition(p) != nil })
	rv, since := p.ResourceVersion, scheduledCondition(p).LastTransitionTime

	// A label that helps nothing: the pod is tried again, fails the same way.
	n1 := makeNode("n1", nodeLabels("rack", "7"))
	n1.ResourceVersion = ""
	if _, err := s.Update(context.Background(), n1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return sc.Stats().Unschedulable >= 2 })
	create(t, s, makePod("q"))
	waitPod(t, s, "q", func(p *api.Pod) bool { return p.Spec.NodeName != "" })
	if p := getPod(t, s, "p"); p.ResourceVersion != rv {
		t.Errorf("the same condition was written again: %v", p.Status.Conditions)
	}

	// Another node changes the message.
	create(t, s, makeNode("n2"))
	p = waitPod(t, s, "p", func(p *api.Pod) bool {
		return scheduledCondition(p).Message == "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	})
	if got := scheduledCondition(p).LastTransitionTime; !got.Equal(&since) {
		t.Errorf("transition time moved from %v to %v", since, got)
	}
}

// recorder is an EventRecorder for tests.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Event(obj api.Object, eventType, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, reason+": "+message)
}

func (r *recorder) has(reason, message string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e == reason+": "+message {
			return true
		}
	}
	return false
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// On a fake clock: a parked pod is sent back when a node is added, waits
// out the rest of its back-off, and is bound when the clock passes it.
func TestRequeueOnNodeAddFakeClock(t *testing.T) {
	s := storetest.NewMemory(t)
	create(t, s, makeNode("n1"))
	clk := testingclock.NewFakeClock(epoch)
	sc := start(t, s, Options{Clock: clk})
	create(t, s, makePod("p", selector("disk", "ssd")))
	waitFor(t, func() bool { return sc.Stats().Parked == 1 })

	create(t, s, makeNode("n2", nodeLabels("disk", "ssd")))
	// Sent back at once, but its first back-off (1s) has not ended.
	waitFor(t, func() bool { st := sc.Stats(); return st.Backoff == 1 && st.Parked == 0 })
	// The queue's timer for it, and its sweep ticker, are set.
	waitFor(t, func() bool { return clk.Waiters() >= 2 })
	if p := getPod(t, s, "p"); p.Spec.NodeName != "" {
		t.Fatalf("bound during back-off to %s", p.Spec.NodeName)
	}
	clk.Step(time.Second)
	waitPod(t, s, "p", boundTo("n2"))

	// A pod parked for longer than its back-off goes straight to a node
	// that arrives: with the clock standing still (no back-off timer, no
	// sweep), bound at the very time the node came, well within a second.
	create(t, s, makePod("q", selector("disk", "nvme")))
	waitFor(t, func() bool { return sc.Stats().Parked == 1 })
	clk.Step(2 * time.Second)
	added := clk.Now()
	create(t, s, makeNode("n3", nodeLabels("disk", "nvme")))
	q := waitPod(t, s, "q", boundTo("n3"))
	if c := scheduledCondition(q); c == nil || c.Status != api.ConditionTrue || !c.LastTransitionTime.Time.Equal(added) {
		t.Errorf("PodScheduled %+v, want True since %v, when the node came", c, added)
	}
}

// TestRunEndsWellWithItsCaller: a caller that ends the scheduler's context,
// with a cause of its own (a server shutting down), gets nil: the
// scheduler failed at nothing. A store that closes under it is an error.
func TestRunEndsWellWithItsCaller(t *testing.T) {
	s := storetest.NewMemory(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	sc := New(s, Options{})
	go func() { done <- sc.Run(ctx) }()
	cancel(errors.New("server shutting down"))
	if err := <-done; err != nil {
		t.Errorf("Run after its caller ended it: %v, want nil", err)
	}

	s = storetest.NewMemory(t)
	sc = New(s, Options{})
	go func() { done <- sc.Run(context.Background()) }()
	s.Close()
	if err := <-done; err == nil {
		t.Error("Run over a store that closed: nil, want its error")
	}
}

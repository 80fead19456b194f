package sched

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

// podEvents returns the stored events about pod name, by reason.
func podEvents(t *testing.T, s *store.Store, name string) map[string][]*api.Event {
	t.Helper()
	objs, _, err := s.List(api.KindOf(&api.Event{}), store.Filter{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*api.Event{}
	for _, o := range objs {
		ev := o.(*api.Event)
		if ev.InvolvedObject.Kind == "Pod" && ev.InvolvedObject.Name == name {
			out[ev.Reason] = append(out[ev.Reason], ev)
		}
	}
	return out
}

// The real scheduler with the store-backed recorder: an unschedulable pod
// gets one FailedScheduling per back-off, however often the cluster
// changes in between, and Scheduled when it binds.
func TestSchedulerRecordsEventsInTheStore(t *testing.T) {
	s := storetest.NewMemory(t)
	create(t, s, makeNode("n1"))
	clk := testingclock.NewFakeClock(epoch)
	w := event.NewWriter(s, event.Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	sc := start(t, s, Options{Clock: clk, Events: w.Recorder(api.DefaultSchedulerName, "")})

	create(t, s, makePod("p", selector("disk", "ssd")))
	const msg = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	failed := func(count int32) func() error {
		return func() error {
			evs := podEvents(t, s, "p")["FailedScheduling"]
			if len(evs) != 1 || evs[0].Count != count || evs[0].Message != msg || evs[0].Type != api.EventTypeWarning {
				return fmt.Errorf("FailedScheduling events %+v, want one of count %d", evs, count)
			}
			return nil
		}
	}
	testtool.WaitFor(t, 5*time.Second, "the first FailedScheduling", failed(1))

	// Node changes that do not help send the pod back, but its back-off
	// holds it: no attempt, no event.
	moves := queueMoves(sc)
	for i := range 5 {
		n1 := makeNode("n1", nodeLabels("rack", fmt.Sprint(i)))
		n1.ResourceVersion = ""
		if _, err := s.Update(context.Background(), n1); err != nil {
			t.Fatal(err)
		}
	}
	// Until the scheduler has seen the last of them, one of them could
	// still send the pod back during an attempt below, which must then
	// back off for longer than the clock is stepped.
	waitCached(t, sc, "n1", moves+5, func(n *NodeInfo) bool { return n.labels["rack"] == "4" })
	waitFor(t, func() bool { st := sc.Stats(); return st.Backoff == 1 && st.Parked == 0 })
	if st := sc.Stats(); st.Attempts != 1 {
		t.Fatalf("%d attempts during the back-off, want 1", st.Attempts)
	}
	waitFor(t, func() bool { return clk.Waiters() >= 2 })
	clk.Step(time.Second)
	waitFor(t, func() bool { return sc.Stats().Unschedulable == 2 })
	testtool.WaitFor(t, 5*time.Second, "FailedScheduling bumped to 2", failed(2))

	moves = queueMoves(sc)
	create(t, s, makeNode("n2", nodeLabels("disk", "ssd")))
	waitCached(t, sc, "n2", moves+1, func(*NodeInfo) bool { return true })
	waitFor(t, func() bool { st := sc.Stats(); return st.Backoff == 1 && st.Parked == 0 })
	waitFor(t, func() bool { return clk.Waiters() >= 2 })
	clk.Step(2 * time.Second)
	waitPod(t, s, "p", boundTo("n2"))
	testtool.WaitFor(t, 5*time.Second, "Scheduled", func() error {
		evs := podEvents(t, s, "p")["Scheduled"]
		if len(evs) != 1 || evs[0].Message != "Successfully assigned default/p to n2" || evs[0].Type != api.EventTypeNormal ||
			evs[0].Source.Component != api.DefaultSchedulerName {
			return fmt.Errorf("Scheduled events %+v", evs)
		}
		return nil
	})
	if err := failed(2)(); err != nil {
		t.Error(err)
	}
}

// waitCached waits until the scheduler's cache holds the node as cond
// wants it and the queue has been moved moves times in all (each node
// change that could help a pod moves it once, right after the cache
// takes the change): its watch has then handled every change the test
// made before.
func waitCached(t *testing.T, sc *Scheduler, name string, moves uint64, cond func(*NodeInfo) bool) {
	t.Helper()
	waitFor(t, func() bool {
		var ok bool
		sc.cache.locked(func() {
			n := sc.cache.nodes.Get(name)
			ok = n != nil && n.node != nil && cond(n)
		})
		return ok && queueMoves(sc) >= moves
	})
}

// queueMoves is how many times the queue has sent its unschedulable pods
// back.
func queueMoves(sc *Scheduler) uint64 {
	sc.queue.mu.Lock()
	defer sc.queue.mu.Unlock()
	return sc.queue.moves
}

package sched

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustPop(t *testing.T, q *queue, want string) *queuedPod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qp, pod, err := q.pop(ctx)
	if err != nil {
		t.Fatalf("pop: %v (want %s)", err, want)
	}
	if qp.key != "default/"+want || pod.Name != want {
		t.Fatalf("popped %s, want %s", qp.key, want)
	}
	return qp
}

type queueCounts struct{ active, backoff, parked int }

func countsOf(q *queue) queueCounts {
	a, b, u, _ := q.counts()
	return queueCounts{a, b, u}
}

func TestQueueFIFO(t *testing.T) {
	q := newQueue(testingclock.NewFakeClock(epoch))
	for _, name := range []string{"a", "b", "c"} {
		q.add(makePod(name))
	}
	q.add(makePod("a")) // again: no second entry
	q.delete("default/b")
	mustPop(t, q, "a")
	mustPop(t, q, "c")
	if c := countsOf(q); c != (queueCounts{}) {
		t.Errorf("left %+v", c)
	}
}

func priority(v int32) func(*api.Pod) { return func(p *api.Pod) { p.Spec.Priority = &v } }

// Higher priorities are popped first, in arrival order within one, as
// kube-scheduler's active queue orders them; a removed pod is skipped.
func TestQueuePriorityOrder(t *testing.T) {
	q := newQueue(testingclock.NewFakeClock(epoch))
	q.add(makePod("low"))
	q.add(makePod("high1", priority(10)))
	q.add(makePod("mid", priority(5)))
	q.add(makePod("high2", priority(10)))
	q.add(makePod("gone", priority(20)))
	q.add(makePod("neg", priority(-1)))
	q.delete("default/gone")
	if c := countsOf(q); c != (queueCounts{active: 5}) {
		t.Fatalf("counts %+v", c)
	}
	for _, want := range []string{"high1", "high2", "mid", "low", "neg"} {
		mustPop(t, q, want)
	}
	if c := countsOf(q); c != (queueCounts{}) {
		t.Errorf("left %+v", c)
	}
	q.add(makePod("later", priority(20)))
	mustPop(t, q, "later")
}

func TestBackoffDuration(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := backoffDuration(i + 1); got != w {
			t.Errorf("attempt %d: %v, want %v", i+1, got, w)
		}
	}
}

// An unschedulable pod moved back by an event waits out its back-off:
// 1s after the first attempt, 2s after the second.
func TestQueueBackoffTiming(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	q := newQueue(clk)
	q.add(makePod("a"))
	qp := mustPop(t, q, "a")
	q.addUnschedulable(qp, false)
	if c := countsOf(q); c != (queueCounts{parked: 1}) {
		t.Fatalf("after failing: %+v", c)
	}

	clk.Step(500 * time.Millisecond)
	q.moveAll() // a node was added, half a second in
	if c := countsOf(q); c != (queueCounts{backoff: 1}) {
		t.Fatalf("moved during back-off: %+v", c)
	}
	if next, ok := q.flushBackoff(clk.Now()); !ok || !next.Equal(epoch.Add(time.Second)) {
		t.Fatalf("back-off ends %v, want %v", next, epoch.Add(time.Second))
	}
	clk.Step(499 * time.Millisecond)
	q.flushBackoff(clk.Now())
	if c := countsOf(q); c != (queueCounts{backoff: 1}) {
		t.Fatalf("1ms before the end: %+v", c)
	}
	clk.Step(time.Millisecond)
	q.flushBackoff(clk.Now())
	qp = mustPop(t, q, "a")

	// Second attempt fails at t1: 2s now.
	t1 := clk.Now()
	q.addUnschedulable(qp, false)
	clk.Step(1500 * time.Millisecond)
	q.moveAll()
	if next, _ := q.flushBackoff(clk.Now()); !next.Equal(t1.Add(2 * time.Second)) {
		t.Fatalf("second back-off ends %v, want %v", next, t1.Add(2*time.Second))
	}
	clk.Step(500 * time.Millisecond)
	q.flushBackoff(clk.Now())
	qp = mustPop(t, q, "a")
	if qp.attempts != 3 {
		t.Errorf("attempts %d, want 3", qp.attempts)
	}
}

// Once its back-off is over, an event sends an unschedulable pod straight
// to the active queue.
func TestQueueMoveAfterBackoff(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	q := newQueue(clk)
	q.add(makePod("a"))
	q.addUnschedulable(mustPop(t, q, "a"), false)
	clk.Step(3 * time.Second)
	q.moveAll()
	if c := countsOf(q); c != (queueCounts{active: 1}) {
		t.Fatalf("got %+v", c)
	}
	mustPop(t, q, "a")
}

// An event during the attempt is not lost: the pod backs off instead of
// waiting for the next event.
func TestQueueMoveDuringAttempt(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	q := newQueue(clk)
	q.add(makePod("a"))
	qp := mustPop(t, q, "a")
	q.moveAll()
	q.addUnschedulable(qp, false)
	if c := countsOf(q); c != (queueCounts{backoff: 1}) {
		t.Fatalf("got %+v", c)
	}
}

func TestQueueUnschedulableSweep(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	q := newQueue(clk)
	q.add(makePod("a"))
	q.addUnschedulable(mustPop(t, q, "a"), false)
	clk.Step(5 * time.Minute)
	q.flushUnschedulable(clk.Now())
	if c := countsOf(q); c != (queueCounts{parked: 1}) {
		t.Fatalf("at 5m: %+v", c)
	}
	clk.Step(time.Second)
	q.flushUnschedulable(clk.Now())
	if c := countsOf(q); c != (queueCounts{active: 1}) {
		t.Fatalf("after 5m: %+v", c)
	}
}

func TestQueueUpdatesAndDeletes(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	q := newQueue(clk)
	q.add(makePod("a"))
	q.addUnschedulable(mustPop(t, q, "a"), false)

	// A status change (same generation) leaves it parked.
	p := makePod("a")
	p.Status.Conditions = []api.PodCondition{{Type: api.PodScheduled, Status: api.ConditionFalse}}
	q.add(p)
	if c := countsOf(q); c != (queueCounts{parked: 1}) {
		t.Fatalf("after a status change: %+v", c)
	}
	// A spec change moves it (back-off still applies).
	p = makePod("a")
	p.Generation = 2
	q.add(p)
	if c := countsOf(q); c != (queueCounts{backoff: 1}) {
		t.Fatalf("after a spec change: %+v", c)
	}
	q.delete("default/a")
	if c := countsOf(q); c != (queueCounts{}) {
		t.Fatalf("after delete: %+v", c)
	}
	// Deleted during an attempt: the attempt's outcome is dropped.
	q.add(makePod("b"))
	qp := mustPop(t, q, "b")
	q.delete("default/b")
	q.addUnschedulable(qp, false)
	if c := countsOf(q); c != (queueCounts{}) {
		t.Fatalf("outcome of a deleted pod kept: %+v", c)
	}
	// The same name with a new UID is a new pod.
	q.add(makePod("c"))
	q.addUnschedulable(mustPop(t, q, "c"), false)
	c2 := makePod("c")
	c2.UID = "other"
	q.add(c2)
	if c := countsOf(q); c != (queueCounts{active: 1}) {
		t.Fatalf("recreated pod: %+v", c)
	}
	if qp := mustPop(t, q, "c"); qp.attempts != 1 {
		t.Errorf("recreated pod inherited %d attempts", qp.attempts)
	}
}

// run moves a backed-off pod when the fake clock passes its back-off.
func TestQueueRun(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	q := newQueue(clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.run(ctx) }()
	defer func() { cancel(); <-done }()

	q.add(makePod("a"))
	q.retry(mustPop(t, q, "a"))
	// Wait for run to arm its timer for the back-off (and its sweep ticker).
	waitFor(t, func() bool { return clk.Waiters() >= 2 })
	clk.Step(time.Second)
	mustPop(t, q, "a")
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, "the condition", func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}

// The active FIFO, compacting after many pops, keeps no pointer to a pod
// it handed out: the slots its live pods moved from are cleared.
func TestFIFOCompactionKeepsNoPoppedPod(t *testing.T) {
	var f fifo
	for i := range 3000 {
		f.push(&queuedPod{key: fmt.Sprint(i), at: inActive})
	}
	for i := range 2500 {
		if qp := f.pop(); qp == nil || qp.key != fmt.Sprint(i) {
			t.Fatalf("pop %d: %+v", i, qp)
		}
	}
	live := map[*queuedPod]bool{}
	for _, qp := range f.items[f.head:] {
		live[qp] = true
	}
	for i, qp := range f.items[:cap(f.items)] {
		if qp != nil && !live[qp] {
			t.Fatalf("slot %d keeps popped pod %s", i, qp.key)
		}
	}
	for i := 2500; i < 3000; i++ {
		if qp := f.pop(); qp == nil || qp.key != fmt.Sprint(i) {
			t.Fatalf("pop %d: %+v", i, qp)
		}
	}
}

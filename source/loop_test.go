package source

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/testtool"
)

// fakeCheck serves revisions a test sets, and records what each call was
// told the receiver has.
type fakeCheck struct {
	mu    sync.Mutex
	id    string
	err   error
	calls []string
}

func (f *fakeCheck) set(id string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.id, f.err = id, err
}

func (f *fakeCheck) check(_ context.Context, have string) Revision {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, have)
	if f.err != nil {
		return Revision{Err: f.err}
	}
	return Revision{ID: f.id}
}

func (f *fakeCheck) call(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[i]
}

func (f *fakeCheck) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// runLoop runs l until the test ends, and returns its output.
func runLoop(t *testing.T, l *Loop, trigger, hints Signal) <-chan Revision {
	t.Helper()
	out := make(chan Revision)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, out, trigger, hints) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return out
}

func receive(t *testing.T, out <-chan Revision) Revision {
	t.Helper()
	select {
	case r := <-out:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no revision within 10s")
		return Revision{}
	}
}

// waitFor polls cond until it holds, failing after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, what, func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}

func TestLoop(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	fc := &fakeCheck{id: "a"}
	trigger := NewSignal()
	l := &Loop{Clock: clk, Interval: time.Minute, Jitter: 0.05, Rand: rand.New(rand.NewPCG(1, 2)), Check: fc.check}
	out := runLoop(t, l, trigger, nil)

	if r := receive(t, out); r.ID != "a" || !r.Time.Equal(clk.Now()) {
		t.Fatalf("first revision %+v", r)
	}

	// An interval with nothing changed sends nothing; the receiver is
	// told it has "a".
	clk.Step(time.Minute * 106 / 100)
	waitFor(t, "the second check", func() bool { return fc.count() == 2 })
	if fc.call(1) != "a" {
		t.Errorf("the second check was told the receiver has %q; want a", fc.call(1))
	}

	// A trigger sends even when nothing changed, and asks for it whole.
	trigger.Fire()
	if r := receive(t, out); r.ID != "a" {
		t.Fatalf("after trigger %+v", r)
	}
	if fc.call(2) != "" {
		t.Errorf("a triggered check was told the receiver has %q; want nothing", fc.call(2))
	}

	// A change is sent at the next interval.
	fc.set("b", nil)
	waitFor(t, "the poll timer", func() bool { return clk.HasWaiters() })
	clk.Step(time.Minute * 106 / 100)
	if r := receive(t, out); r.ID != "b" {
		t.Fatalf("after change %+v", r)
	}

	// A failure is sent, and retried sooner than the interval, with
	// back-off; each failure is sent.
	fc.set("b", errors.New("unreachable"))
	waitFor(t, "the poll timer", func() bool { return clk.HasWaiters() })
	clk.Step(time.Minute * 106 / 100)
	if r := receive(t, out); r.Err == nil {
		t.Fatalf("want a failure, got %+v", r)
	}
	waitFor(t, "the retry timer", func() bool { return clk.HasWaiters() })
	clk.Step(RetryInitial * 12 / 10)
	if r := receive(t, out); r.Err == nil {
		t.Fatalf("want the retry's failure, got %+v", r)
	}
	waitFor(t, "the retry timer", func() bool { return clk.HasWaiters() })
	clk.Step(RetryInitial * 12 / 10)
	select {
	case r := <-out:
		t.Fatalf("the second retry came before its back-off: %+v", r)
	default:
	}
	n := fc.count()
	clk.Step(RetryInitial * 12 / 10) // now past 2×RetryInitial±10%
	waitFor(t, "the second retry", func() bool { return fc.count() == n+1 })
	<-out

	// Recovery with the same ID is sent: the receiver's last was a failure.
	fc.set("b", nil)
	waitFor(t, "the retry timer", func() bool { return clk.HasWaiters() })
	clk.Step(time.Minute)
	if r := receive(t, out); r.ID != "b" || r.Err != nil {
		t.Fatalf("after recovery %+v", r)
	}
}

func TestLoopJitterStaysWithinBounds(t *testing.T) {
	l := &Loop{Interval: time.Minute, Jitter: 0.05}
	rnd := rand.New(rand.NewPCG(3, 4))
	lo, hi := time.Hour, time.Duration(0)
	for range 1000 {
		d := l.jittered(rnd)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 57*time.Second || hi > 63*time.Second || hi-lo < 5*time.Second {
		t.Errorf("jittered intervals in [%v, %v]; want spread across 57s–63s", lo, hi)
	}
}

func TestLoopDebouncesHints(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	fc := &fakeCheck{id: "a"}
	hints := NewSignal()
	hinted := make(chan struct{})
	l := &Loop{Clock: clk, Interval: time.Hour, Debounce: 200 * time.Millisecond, Check: fc.check,
		hinted: func() { hinted <- struct{}{} }}
	out := runLoop(t, l, NewSignal(), hints)
	receive(t, out)
	waitFor(t, "the poll timer", func() bool { return clk.Waiters() == 1 })

	fc.set("b", nil)
	hints.Fire()
	<-hinted
	for range 5 { // a burst, each hint within the quiet period of the last
		clk.Step(150 * time.Millisecond)
		hints.Fire()
		<-hinted
	}
	if fc.count() != 1 {
		t.Fatalf("%d checks during the burst; want none after the first", fc.count()-1)
	}
	clk.Step(250 * time.Millisecond)
	if r := receive(t, out); r.ID != "b" {
		t.Fatalf("after the burst %+v", r)
	}
	if fc.count() != 2 {
		t.Errorf("%d checks for a burst; want one", fc.count()-1)
	}
}

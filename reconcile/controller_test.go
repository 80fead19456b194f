package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// calls counts Reconcile calls per key.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

// inc records a call for key and returns which call it is, from 1.
func (c *calls) inc(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[key]++
	return c.n[key]
}

func (c *calls) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// runController runs a controller named "test" on a fake clock with two
// workers until the test ends.
func runController(t *testing.T, r Reconciler, opts Options) (*Controller, *clocktesting.FakeClock, *testtool.Buffer) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	logs := &testtool.Buffer{}
	opts.Clock = clk
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c := NewController("test", r, opts)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("Run() = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context was cancelled")
		}
	})
	return c, clk, logs
}

func TestControllerRetriesWithBackoff(t *testing.T) {
	const key = "ns/web"
	var n calls
	c, clk, logs := runController(t, ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		if n.inc(key) <= 3 {
			return Result{}, errors.New("store conflict")
		}
		return Result{}, nil
	}), Options{})

	c.Enqueue(key)
	for i, want := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
		fireAt(t, clk, queueTimers, want)
		eventually(t, fmt.Sprintf("call %d", i+2), func() bool { return n.get(key) == i+2 })
	}

	want := Stats{Reconciles: 4, Errors: 3, Requeues: 3}
	eventually(t, "stats after success", func() bool { return c.Stats() == want })
	if got := c.queue.NumRequeues(key); got != 0 {
		t.Errorf("NumRequeues after success = %d, want 0: success must Forget", got)
	}
	if got := logs.String(); !strings.Contains(got, "controller=test key=ns/web") {
		t.Errorf("log does not name controller and key:\n%s", got)
	}
}

func TestControllerDropsTerminalErrors(t *testing.T) {
	const key = "ns/web"
	var n calls
	c, clk, logs := runController(t, ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		n.inc(key)
		return Result{}, fmt.Errorf("deployment %s: %w", key, Terminal(errors.New("spec.replicas: must not be negative")))
	}), Options{})

	c.Enqueue(key)
	eventually(t, "terminal error to be logged", func() bool {
		return strings.Contains(logs.String(), "not retrying")
	})
	if got, want := c.Stats(), (Stats{Reconciles: 1, Errors: 1, Terminal: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	if n := clk.Waiters(); n != queueTimers {
		t.Error("key with a terminal error was requeued")
	}
	if got := c.queue.Len(); got != 0 {
		t.Errorf("queue Len() = %d, want 0", got)
	}
	if got := n.get(key); got != 1 {
		t.Errorf("Reconcile called %d times, want 1", got)
	}
}

func TestControllerRecoversPanics(t *testing.T) {
	const key = "web"
	var n calls
	c, clk, logs := runController(t, ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		if n.inc(key) == 1 {
			var m map[string]int
			m[key]++ // a bug: write to a nil map
		}
		return Result{}, nil
	}), Options{})

	c.Enqueue(key)
	fireAt(t, clk, queueTimers, DefaultBaseDelay)
	if got := logs.String(); !strings.Contains(got, "reconcile panicked") || !strings.Contains(got, "key=web") {
		t.Errorf("panic not logged with its key:\n%s", got)
	}
	want := Stats{Reconciles: 2, Errors: 1, Requeues: 1}
	eventually(t, "retry after panic", func() bool { return c.Stats() == want })
}

func TestControllerRequeueAfter(t *testing.T) {
	const key = "ns/job"
	var n calls
	c, clk, _ := runController(t, ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		if n.inc(key) == 1 {
			return Result{RequeueAfter: 5 * time.Second}, nil
		}
		return Result{}, nil
	}), Options{})

	c.Enqueue(key)
	waiters(t, clk, queueTimers+1)
	if got := c.queue.NumRequeues(key); got != 0 {
		t.Errorf("NumRequeues = %d, want 0: RequeueAfter is not a failure", got)
	}
	fireAt(t, clk, queueTimers, 5*time.Second)
	want := Stats{Reconciles: 2, Requeues: 1}
	eventually(t, "requeued reconcile", func() bool { return c.Stats() == want })
}

func TestControllerEnqueueAfter(t *testing.T) {
	var n calls
	c, clk, _ := runController(t, ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		n.inc(key)
		return Result{}, nil
	}), Options{})

	c.EnqueueAfter("a", 9*time.Second)
	c.EnqueueAfter("a", 3*time.Second)
	fireAt(t, clk, queueTimers, 3*time.Second) // the earlier time wins
	eventually(t, "a to be reconciled", func() bool { return n.get("a") == 1 })
}

func TestControllerResync(t *testing.T) {
	var n calls
	keys := []string{"ns/a", "ns/b"}
	c, clk, _ := runController(t, ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		n.inc(key)
		return Result{}, nil
	}), Options{
		ResyncPeriod: time.Minute,
		ListKeys: func(ctx context.Context) ([]string, error) {
			return keys, nil
		},
	})

	for round := 1; round <= 3; round++ {
		eventually(t, fmt.Sprintf("resync round %d", round), func() bool {
			return n.get("ns/a") == round && n.get("ns/b") == round
		})
		waiters(t, clk, queueTimers+1) // the resync ticker
		clk.Step(time.Minute)
	}
	eventually(t, "round 4", func() bool { return c.Stats().Reconciles == 8 })
}

func TestControllerRunStopsAndLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	var started, finished atomic.Bool
	c := NewController("test", ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		if key == "slow" {
			started.Store(true)
			<-ctx.Done()
			finished.Store(true)
			return Result{}, ctx.Err()
		}
		return Result{RequeueAfter: time.Hour}, nil
	}), Options{
		Clock:        clocktesting.NewFakeClock(epoch),
		Logger:       slog.New(slog.DiscardHandler),
		ResyncPeriod: time.Minute,
		ListKeys: func(ctx context.Context) ([]string, error) {
			return []string{"a", "b", "c", "slow"}, nil
		},
	})
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx, 4) }()
	eventually(t, "all keys picked up", func() bool { return c.Stats().Reconciles == 3 && started.Load() })

	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run() = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	if !finished.Load() {
		t.Error("Run returned before a worker finished its key")
	}
	eventually(t, fmt.Sprintf("goroutines back to %d", before), func() bool {
		return runtime.NumGoroutine() <= before
	})
}

func TestControllerRunRejectsMisuse(t *testing.T) {
	c := NewController("test", ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		return Result{}, nil
	}), Options{Clock: clocktesting.NewFakeClock(epoch)})

	if err := c.Run(context.Background(), 0); err == nil {
		t.Error("Run with 0 workers: want an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx, 1); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if err := c.Run(ctx, 1); err == nil {
		t.Error("second Run: want an error")
	}
}

func TestIsTerminal(t *testing.T) {
	base := errors.New("spec.replicas: must not be negative")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "plain", err: base, want: false},
		{name: "terminal", err: Terminal(base), want: true},
		{name: "wrapped terminal", err: fmt.Errorf("deployment ns/web: %w", Terminal(base)), want: true},
		{name: "terminal of nil", err: Terminal(nil), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTerminal(tt.err); got != tt.want {
				t.Errorf("IsTerminal(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if err := Terminal(base); !errors.Is(err, base) || err.Error() != base.Error() {
		t.Errorf("Terminal(%v) = %v, want it to wrap and read as the original", base, err)
	}
}

// TestControllerConflictsAreNotErrors: losing a write race to another
// writer is routine among controllers; the retry is logged at debug, and
// any other error at error level.
func TestControllerConflictsAreNotErrors(t *testing.T) {
	var n calls
	c, clk, logs := runController(t, ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		switch n.inc(key) {
		case 1:
			return Result{}, fmt.Errorf("update %s: %w", key, store.ErrConflict)
		case 2:
			return Result{}, errors.New("disk on fire")
		}
		return Result{}, nil
	}), Options{})
	c.Enqueue("ns/web")
	for i := 2; i <= 3; i++ {
		fireAt(t, clk, queueTimers, DefaultBaseDelay<<(i-2))
		eventually(t, fmt.Sprintf("call %d", i), func() bool { return n.get("ns/web") == i })
	}
	got := logs.String()
	if strings.Contains(got, "conflict") {
		t.Errorf("a conflict was logged above debug:\n%s", got)
	}
	if !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "disk on fire") {
		t.Errorf("another error was not logged as one:\n%s", got)
	}
}

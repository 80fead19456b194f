package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// queueTimers is how many waiters a queue keeps on its clock while no key
// waits for a time: client-go's delaying queue's heartbeat ticker and its
// metrics' ticker for the unfinished work.
const queueTimers = 2

func newTestQueue(t *testing.T, b Backoff) (*Queue, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	q := NewQueue(clk, b)
	t.Cleanup(q.ShutDown)
	waiters(t, clk, queueTimers)
	return q, clk
}

// eventually polls cond until it holds, failing the test after a generous
// deadline. Tests wait with it, never with a sleep.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// waiters waits until clk has n timers and tickers. A delayed key's timer
// is set by the queue's own goroutine: stepping the clock before it is set
// would make it late.
func waiters(t *testing.T, clk *clocktesting.FakeClock, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d waiters on the clock", n), func() bool { return clk.Waiters() == n })
}

// fireAt checks that the one key waiting on the clock, beside base other
// waiters, becomes ready after exactly d: not a nanosecond before. Nothing
// else may fire meanwhile, so d stays under the queue's heartbeat (10s).
func fireAt(t *testing.T, clk *clocktesting.FakeClock, base int, d time.Duration) {
	t.Helper()
	waiters(t, clk, base+1)
	clk.Step(d - time.Nanosecond)
	if n := clk.Waiters(); n != base+1 {
		t.Fatalf("the delay fired before %v", d)
	}
	clk.Step(time.Nanosecond)
}

// mustGet gets a key that the test knows is ready.
func mustGet(t *testing.T, q *Queue) string {
	t.Helper()
	key, shutdown := q.Get(context.Background())
	if shutdown {
		t.Fatal("Get: queue shut down, want a key")
	}
	return key
}

// TestBackoffRateLimiter: the delays double from the base up to the
// maximum, per key, until the key is forgotten.
func TestBackoffRateLimiter(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Backoff
		want []time.Duration
	}{
		{"defaults", Backoff{}, []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}},
		{"capped", Backoff{Base: time.Second, Max: 3 * time.Second}, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}},
		{"default cap", Backoff{Base: 500 * time.Second}, []time.Duration{500 * time.Second, DefaultMaxDelay, DefaultMaxDelay}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.b.RateLimiter()
			for i, want := range tc.want {
				if got := l.When("a"); got != want {
					t.Fatalf("failure %d: %v, want %v", i+1, got, want)
				}
			}
			if got := l.NumRequeues("a"); got != len(tc.want) {
				t.Errorf("NumRequeues = %d, want %d", got, len(tc.want))
			}
			if got := l.When("b"); got != tc.want[0] {
				t.Errorf("another key's first delay = %v, want %v", got, tc.want[0])
			}
			l.Forget("a")
			if got := l.When("a"); got != tc.want[0] {
				t.Errorf("after Forget: %v, want %v", got, tc.want[0])
			}
		})
	}
}

// TestBackoffJitter: a randomization factor spreads the delays within its
// bounds, around the same doubling.
func TestBackoffJitter(t *testing.T) {
	l := Backoff{Base: time.Second, RandomizationFactor: 0.5}.RateLimiter()
	seen := map[time.Duration]bool{}
	for i := range 50 {
		key := strconv.Itoa(i)
		for _, d := range []time.Duration{time.Second, 2 * time.Second} {
			got := l.When(key)
			if got < d/2 || got > d*3/2 {
				t.Fatalf("delay %v outside [%v, %v]", got, d/2, d*3/2)
			}
			seen[got] = true
		}
	}
	if len(seen) < 10 {
		t.Errorf("only %d distinct delays in 100: not spread", len(seen))
	}
}

// TestQueueRetriesOnTheClock: a rate-limited key becomes ready when its
// back-off has passed on the injected clock, and not before.
func TestQueueRetriesOnTheClock(t *testing.T) {
	q, clk := newTestQueue(t, Backoff{Base: time.Second})
	q.AddRateLimited("a")
	q.AddRateLimited("a") // a second failure before the first retry: 2s, the earlier time wins
	fireAt(t, clk, queueTimers, time.Second)
	eventually(t, "a to be ready", func() bool { return q.Len() == 1 })
	key := mustGet(t, q)
	if key != "a" {
		t.Fatalf("Get() = %q, want a", key)
	}
	q.Done(key)
	if n := q.NumRequeues("a"); n != 2 {
		t.Errorf("NumRequeues = %d, want 2", n)
	}
}

func TestQueueGetHonoursContext(t *testing.T) {
	q, _ := newTestQueue(t, Backoff{})
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan bool, 1)
	go func() {
		_, shutdown := q.Get(ctx)
		result <- shutdown
	}()
	// A done context stops Get even with keys ready, and leaves them for
	// other workers.
	done, stop := context.WithCancel(context.Background())
	stop()
	q.Add("a")
	if r := <-result; r {
		t.Fatal("Get with a live context: shutdown, want a key")
	}
	q.Done("a")
	q.Add("b")
	if key, shutdown := q.Get(done); !shutdown {
		t.Errorf("Get(done ctx) = %q, want shutdown", key)
	}
	if got := mustGet(t, q); got != "b" {
		t.Errorf("Get() = %q, want b", got)
	}
	q.Done("b")

	// A key taken after the context ended is given back, not handed out:
	// the owner shuts the queue down when its context ends.
	q.Add("c")
	cancel()
	q.ShutDown()
	if key, shutdown := q.Get(ctx); !shutdown {
		t.Errorf("Get after ShutDown = %q, want shutdown", key)
	}
	q.ShutDown() // twice is fine
}

// BenchmarkQueueAddGetDone measures one key's round trip through the queue,
// Add then Get then Done, with every P doing it at once on keys of its own.
func BenchmarkQueueAddGetDone(b *testing.B) { benchQueue(b, false) }

// BenchmarkQueueAddGetDoneInstrumented is the same round trip on a queue
// that reports to Metrics, as every controller's does in a server.
func BenchmarkQueueAddGetDoneInstrumented(b *testing.B) { benchQueue(b, true) }

func benchQueue(b *testing.B, instrumented bool) {
	q := NewQueue(clock.RealClock{}, Backoff{})
	defer q.ShutDown()
	if instrumented {
		q.instrument(NewMetrics().forQueue("bench"))
	}
	var workers atomic.Int64
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		// Every key is new, so no Add is folded into a queued duplicate and
		// every Get has a key to take: each goroutine adds before it gets.
		prefix := Key(fmt.Sprintf("ns-%d", workers.Add(1)), "obj-")
		buf := []byte(prefix)
		for i := 0; pb.Next(); i++ {
			q.Add(string(strconv.AppendInt(buf[:len(prefix)], int64(i), 10)))
			key, _ := q.Get(ctx)
			q.Done(key)
		}
	})
}

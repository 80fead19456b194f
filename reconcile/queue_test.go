package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

func newTestQueue(t *testing.T, b Backoff) (*Queue, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	q := NewQueue(clk, b)
	t.Cleanup(q.ShutDown)
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

// settled waits until the queue's delay loop has its timer set for the
// earliest delayed key. Stepping the fake clock before that could fall between
// the loop reading the time and setting its timer, and the timer would be late.
func settled(t *testing.T, q *Queue) {
	t.Helper()
	eventually(t, "delay loop to set its timer", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.delayed) == 0 {
			return q.armedFor.IsZero()
		}
		return q.armedFor.Equal(q.delayed[0].at)
	})
}

// delayedAt reports when a delayed key becomes ready.
func delayedAt(q *Queue, key string) (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	dk, ok := q.delayedBy[key]
	if !ok {
		return time.Time{}, false
	}
	return dk.at, true
}

// mustGet gets a key that the test knows is ready.
func mustGet(t *testing.T, q *Queue) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key, shutdown := q.Get(ctx)
	if shutdown {
		t.Fatal("Get: queue shut down or timed out, want a key")
	}
	return key
}

// drain gets and releases every ready key, returning them in order.
func drain(t *testing.T, q *Queue) []string {
	t.Helper()
	var keys []string
	for q.Len() > 0 {
		key := mustGet(t, q)
		q.Done(key)
		keys = append(keys, key)
	}
	return keys
}

func TestQueueAddDeduplicates(t *testing.T) {
	tests := []struct {
		name string
		adds []string
		want []string
	}{
		{name: "one key", adds: []string{"a"}, want: []string{"a"}},
		{name: "repeats collapse", adds: []string{"a", "b", "a", "c", "b", "a"}, want: []string{"a", "b", "c"}},
		{name: "first add sets the order", adds: []string{"c", "a", "c"}, want: []string{"c", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newTestQueue(t, Backoff{})
			for _, key := range tt.adds {
				q.Add(key)
			}
			if got := q.Len(); got != len(tt.want) {
				t.Errorf("Len() = %d, want %d", got, len(tt.want))
			}
			if got := drain(t, q); !slices.Equal(got, tt.want) {
				t.Errorf("got keys %q, want %q", got, tt.want)
			}
		})
	}
}

func TestQueueAddWhileProcessing(t *testing.T) {
	q, _ := newTestQueue(t, Backoff{})
	q.Add("a")
	if got := mustGet(t, q); got != "a" {
		t.Fatalf("Get() = %q, want a", got)
	}

	q.Add("a")
	q.Add("a")
	if got := q.Len(); got != 0 {
		t.Fatalf("Len() while a is held = %d, want 0: a held key must not be handed out again", got)
	}
	q.Done("a")
	if got := q.Len(); got != 1 {
		t.Fatalf("Len() after Done = %d, want 1: the adds while held must requeue a once", got)
	}
	if got := drain(t, q); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("got keys %q, want [a]", got)
	}

	// Done for a key nobody holds must not queue a second copy.
	q.Add("b")
	q.Done("b")
	if got := q.Len(); got != 1 {
		t.Fatalf("Len() after Done of an unheld key = %d, want 1", got)
	}
}

// TestQueueNeverHandsKeyToTwoWorkers hammers the queue from many goroutines
// and checks, per key, that at most one worker holds it at a time and that
// every key added is processed.
func TestQueueNeverHandsKeyToTwoWorkers(t *testing.T) {
	const (
		keys    = 16
		adders  = 8
		adds    = 2000
		workers = 8
	)
	q, _ := newTestQueue(t, Backoff{})
	var holders, processed [keys]atomic.Int64
	names := make([]string, keys)
	index := make(map[string]int, keys)
	for i := range names {
		names[i] = Key("ns", fmt.Sprintf("obj-%d", i))
		index[names[i]] = i
	}

	ctx := context.Background()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				key, shutdown := q.Get(ctx)
				if shutdown {
					return
				}
				i := index[key]
				if n := holders[i].Add(1); n != 1 {
					t.Errorf("key %s held by %d workers at once", key, n)
				}
				if rand.IntN(4) == 0 {
					q.Add(key) // a change arrives while we work
				}
				runtime.Gosched()
				holders[i].Add(-1)
				processed[i].Add(1)
				q.Done(key)
			}
		})
	}
	var adding sync.WaitGroup
	for range adders {
		adding.Go(func() {
			for range adds {
				q.Add(names[rand.IntN(keys)])
			}
		})
	}
	adding.Wait()
	eventually(t, "queue to drain", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.ready) == 0 && len(q.processing) == 0 && len(q.dirty) == 0
	})
	q.ShutDown()
	wg.Wait()

	for i := range keys {
		if processed[i].Load() == 0 {
			t.Errorf("key %s was never processed", names[i])
		}
	}
}

func TestQueueAddRateLimited(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		backoff Backoff
		want    []time.Duration // delay before each retry, in order
	}{
		{
			name: "defaults double from 5ms",
			want: []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms},
		},
		{
			name:    "capped at max",
			backoff: Backoff{Base: 10 * ms, Max: 50 * ms},
			want:    []time.Duration{10 * ms, 20 * ms, 40 * ms, 50 * ms, 50 * ms},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newTestQueue(t, tt.backoff)

			// retry fails key once more and checks it waits exactly want.
			retry := func(want time.Duration) {
				t.Helper()
				q.AddRateLimited("a")
				at, ok := delayedAt(q, "a")
				if !ok {
					t.Fatal("a is not waiting after AddRateLimited")
				}
				if got := at.Sub(clk.Now()); got != want {
					t.Fatalf("back-off = %v, want %v", got, want)
				}
				settled(t, q)
				clk.Step(want - time.Nanosecond)
				if got := q.Len(); got != 0 {
					t.Fatalf("Len() a nanosecond early = %d, want 0", got)
				}
				clk.Step(time.Nanosecond)
				eventually(t, "a to become ready", func() bool { return q.Len() == 1 })
				if got := drain(t, q); !slices.Equal(got, []string{"a"}) {
					t.Fatalf("got keys %q, want [a]", got)
				}
			}

			for i, want := range tt.want {
				retry(want)
				if got := q.NumRequeues("a"); got != i+1 {
					t.Errorf("NumRequeues = %d, want %d", got, i+1)
				}
			}
			q.Forget("a")
			if got := q.NumRequeues("a"); got != 0 {
				t.Errorf("NumRequeues after Forget = %d, want 0", got)
			}
			retry(tt.want[0])
		})
	}
}

func TestQueueAddAfter(t *testing.T) {
	ms := time.Millisecond
	type add struct {
		key   string
		after time.Duration
	}
	type step struct {
		by   time.Duration
		want []string // keys ready after the step, in order
	}
	tests := []struct {
		name  string
		adds  []add
		steps []step
	}{
		{
			name: "ready in time order",
			adds: []add{{"c", 30 * ms}, {"a", 10 * ms}, {"b", 20 * ms}},
			steps: []step{
				{by: 10 * ms, want: []string{"a"}},
				{by: 10 * ms, want: []string{"b"}},
				{by: 10 * ms, want: []string{"c"}},
			},
		},
		{
			name:  "several ready at once come out in time order",
			adds:  []add{{"c", 30 * ms}, {"a", 10 * ms}, {"b", 20 * ms}},
			steps: []step{{by: time.Second, want: []string{"a", "b", "c"}}},
		},
		{
			name:  "same time keeps add order",
			adds:  []add{{"b", 10 * ms}, {"a", 10 * ms}},
			steps: []step{{by: 10 * ms, want: []string{"b", "a"}}},
		},
		{
			name: "earlier deadline wins",
			adds: []add{{"a", 50 * ms}, {"a", 10 * ms}, {"a", 100 * ms}},
			steps: []step{
				{by: 9 * ms, want: nil},
				{by: 1 * ms, want: []string{"a"}},
				{by: time.Second, want: nil},
			},
		},
		{
			name: "earlier deadline reorders",
			adds: []add{{"a", 10 * ms}, {"b", 20 * ms}, {"b", 5 * ms}},
			steps: []step{
				{by: 5 * ms, want: []string{"b"}},
				{by: 5 * ms, want: []string{"a"}},
			},
		},
		{
			name:  "no delay is Add",
			adds:  []add{{"a", 0}, {"b", -time.Second}},
			steps: []step{{by: 0, want: []string{"a", "b"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newTestQueue(t, Backoff{})
			for _, a := range tt.adds {
				q.AddAfter(a.key, a.after)
			}
			var elapsed time.Duration
			for _, s := range tt.steps {
				settled(t, q)
				clk.Step(s.by)
				elapsed += s.by
				eventually(t, fmt.Sprintf("%d keys ready at +%v", len(s.want), elapsed), func() bool {
					return q.Len() == len(s.want)
				})
				if got := drain(t, q); !slices.Equal(got, s.want) {
					t.Fatalf("at +%v got keys %q, want %q", elapsed, got, s.want)
				}
			}
		})
	}
}

func TestQueueShutDown(t *testing.T) {
	q := NewQueue(clocktesting.NewFakeClock(epoch), Backoff{})
	const getters = 3
	results := make(chan bool, getters)
	for range getters {
		go func() {
			_, shutdown := q.Get(context.Background())
			results <- shutdown
		}()
	}
	q.AddAfter("later", time.Hour) // the delay loop holds a timer
	q.ShutDown()
	for range getters {
		select {
		case shutdown := <-results:
			if !shutdown {
				t.Error("Get returned a key, want shutdown")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Get still blocked after ShutDown")
		}
	}

	q.Add("a")
	q.AddAfter("b", 0)
	q.AddRateLimited("c")
	if got := q.Len(); got != 0 {
		t.Errorf("Len() after adds to a shut down queue = %d, want 0", got)
	}
	if key, shutdown := q.Get(context.Background()); !shutdown {
		t.Errorf("Get() after ShutDown = %q, want shutdown", key)
	}
	q.ShutDown() // twice is fine
}

func TestQueueGetHonoursContext(t *testing.T) {
	q, _ := newTestQueue(t, Backoff{})

	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan bool, 1)
	go func() {
		_, shutdown := q.Get(ctx)
		result <- shutdown
	}()
	cancel()
	select {
	case shutdown := <-result:
		if !shutdown {
			t.Error("Get returned a key, want shutdown")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get still blocked after its context was cancelled")
	}

	// A done context stops Get even with keys ready, and leaves them for
	// other workers.
	q.Add("a")
	if key, shutdown := q.Get(ctx); !shutdown {
		t.Errorf("Get(done ctx) = %q, want shutdown", key)
	}
	if got := mustGet(t, q); got != "a" {
		t.Errorf("Get() = %q, want a", got)
	}
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

// TestQueueLetsGoOfABurst: a queue that drained a burst of keys holds no
// storage sized for it, and still deduplicates and hands out keys after.
func TestQueueLetsGoOfABurst(t *testing.T) {
	q, _ := newTestQueue(t, Backoff{})
	for i := range 10 * shrinkAbove {
		q.Add(fmt.Sprintf("key-%d", i))
	}
	if got := len(drain(t, q)); got != 10*shrinkAbove {
		t.Fatalf("drained %d keys, want %d", got, 10*shrinkAbove)
	}
	q.mu.Lock()
	readyCap, peak := cap(q.ready), q.dirtyPeak
	q.mu.Unlock()
	if readyCap != 0 || peak != 0 {
		t.Errorf("after the burst: ready cap %d, dirty peak %d; want both 0 (storage released)", readyCap, peak)
	}
	q.Add("a")
	q.Add("a")
	q.Add("b")
	if got := drain(t, q); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("after the burst: got %q, want [a b]", got)
	}
}

package reconcile

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"k8s.io/utils/clock"
)

// Default back-off bounds, the ones client-go's per-item exponential limiter
// uses: a quick first retry for transient conflicts, and a ceiling that still
// retries a broken object about every quarter of an hour.
const (
	DefaultBaseDelay = 5 * time.Millisecond
	DefaultMaxDelay  = 1000 * time.Second
)

// Backoff shapes the per-key retry delays of AddRateLimited, so a key that
// keeps failing is retried less and less often instead of spinning a worker.
// The zero value means the defaults and no jitter.
type Backoff struct {
	// Base is the delay after the first failure; each further failure
	// doubles it. Zero means DefaultBaseDelay.
	Base time.Duration
	// Max caps the delay. Zero means DefaultMaxDelay.
	Max time.Duration
	// RandomizationFactor spreads each delay over [d*(1-f), d*(1+f)] to keep
	// keys that failed together from retrying together. Zero, the default,
	// keeps delays exact so tests on a fake clock are deterministic.
	RandomizationFactor float64
}

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBaseDelay
	}
	if b.Max <= 0 {
		b.Max = DefaultMaxDelay
	}
	return b
}

// Queue is a work queue of object keys. It exists so that controllers are
// level-triggered: however many times a key is added before a worker gets to
// it, the worker sees it once and reads the current state; and a key is never
// handed to two workers at once, so reconciles of one object never race.
//
// A key added while it is being processed is marked dirty and queued again
// when the worker calls Done. Delays (AddAfter, AddRateLimited) run on the
// injected clock. NewQueue starts one goroutine that ShutDown stops, so every
// Queue must be shut down.
type Queue struct {
	clock   clock.Clock
	backoff Backoff

	mu    sync.Mutex
	cond  *sync.Cond // signalled when ready grows or on shutdown; L is &mu
	ready []string   // keys to hand out, in order
	// dirty holds the keys that need processing: in ready, or to go back
	// there on Done. With metrics, the value is when the key was added.
	dirty     map[string]time.Time
	dirtyPeak int // the most keys dirty has held since it was made
	// processing holds the keys held by a worker; with metrics, the value
	// is when the worker got the key.
	processing map[string]time.Time
	failures   map[string]*failure // per-key back-off, until Forget
	metrics    *queueMetrics       // nil: not instrumented
	delayed    delayHeap           // keys waiting for a time, earliest first
	delayedBy  map[string]*delayedKey
	seq        uint64    // orders delayed keys with equal ready times
	armedFor   time.Time // ready time the delay loop's timer was last set for; zero if none
	shutdown   bool

	wake chan struct{} // pokes the delay loop when the earliest delayed key changes
	stop chan struct{} // closed by ShutDown
	done chan struct{} // closed when the delay loop has returned
}

type failure struct {
	backoff  *backoff.ExponentialBackOff
	requeues int
}

// NewQueue returns an empty queue whose delays run on clk (clock.RealClock{}
// if nil) and whose retries back off as b says. Call ShutDown to release it.
func NewQueue(clk clock.Clock, b Backoff) *Queue {
	if clk == nil {
		clk = clock.RealClock{}
	}
	q := &Queue{
		clock:      clk,
		backoff:    b.withDefaults(),
		dirty:      make(map[string]time.Time),
		processing: make(map[string]time.Time),
		failures:   make(map[string]*failure),
		delayedBy:  make(map[string]*delayedKey),
		wake:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	q.cond = sync.NewCond(&q.mu)
	go q.runDelays()
	return q
}

// Add queues key unless it is already waiting to be handed out. Adding a key
// that a worker holds makes the worker's pass stale, so the key is handed out
// again once the worker calls Done. Add after ShutDown does nothing.
func (q *Queue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
}

func (q *Queue) addLocked(key string) {
	if q.shutdown {
		return
	}
	if _, ok := q.dirty[key]; ok {
		return
	}
	var now time.Time
	if q.metrics != nil {
		q.metrics.adds.Inc()
		now = q.clock.Now()
	}
	q.dirty[key] = now
	q.dirtyPeak = max(q.dirtyPeak, len(q.dirty))
	if _, ok := q.processing[key]; ok {
		return
	}
	q.ready = append(q.ready, key)
	q.cond.Signal()
}

// Get blocks until a key is ready and hands it to the caller, who must call
// Done(key) when finished with it. It returns shutdown true, and no key, once
// the queue is shut down or ctx is done: a worker should then return. Keys
// still queued at shutdown are dropped; a level-triggered controller lists
// them again when it starts.
func (q *Queue) Get(ctx context.Context) (key string, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ready) == 0 && !q.shutdown {
		// Wake the waiters when ctx is done. Taking mu first makes sure the
		// Broadcast cannot fall between our check of ctx and our Wait.
		stop := context.AfterFunc(ctx, func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.cond.Broadcast()
		})
		defer stop()
	}
	for len(q.ready) == 0 && !q.shutdown && ctx.Err() == nil {
		q.cond.Wait()
	}
	if q.shutdown || ctx.Err() != nil {
		if len(q.ready) > 0 {
			// We may have consumed the Signal meant for a key; pass it on.
			q.cond.Signal()
		}
		return "", true
	}
	key = q.ready[0]
	q.ready[0] = ""
	q.ready = q.ready[1:]
	var now time.Time
	if q.metrics != nil {
		now = q.clock.Now()
		if added := q.dirty[key]; !added.IsZero() { // zero: added before instrumenting
			q.metrics.queueDuration.Observe(now.Sub(added).Seconds())
		}
	}
	q.processing[key] = now
	delete(q.dirty, key)
	if len(q.ready) == 0 {
		q.release()
	}
	return key, false
}

// shrinkAbove is the size past which a drained queue lets go of its storage.
const shrinkAbove = 1024

// release drops the storage of an empty queue that once held many keys: a
// Go map keeps its buckets and a slice its array after they empty, so one
// burst (a source's first sync queues every object) would otherwise stay
// allocated for the process's life.
func (q *Queue) release() {
	q.ready = nil // what is left of its array is only the unused tail
	if len(q.dirty) == 0 && q.dirtyPeak > shrinkAbove {
		q.dirty, q.dirtyPeak = make(map[string]time.Time), 0
	}
}

// Done releases a key handed out by Get, so it can be handed out again; if it
// was added while held, it is queued now.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	started, ok := q.processing[key]
	if !ok {
		return
	}
	if q.metrics != nil && !started.IsZero() {
		q.metrics.workDuration.Observe(q.clock.Since(started).Seconds())
	}
	delete(q.processing, key)
	if _, ok := q.dirty[key]; ok {
		q.ready = append(q.ready, key)
		q.cond.Signal()
	}
}

// Forget resets key's back-off, so that after a success the next failure is
// retried quickly again. It does not remove the key from the queue.
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, key)
}

// AddRateLimited queues key after its next back-off delay: the base delay
// after the first failure, doubling with each further one up to the maximum,
// until Forget. It is how a worker retries a key that failed without hammering
// whatever made it fail.
func (q *Queue) AddRateLimited(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	f := q.failures[key]
	if f == nil {
		f = &failure{backoff: backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(q.backoff.Base),
			backoff.WithMaxInterval(q.backoff.Max),
			backoff.WithMultiplier(2),
			backoff.WithRandomizationFactor(q.backoff.RandomizationFactor),
			backoff.WithMaxElapsedTime(0), // never give up: Terminal is how to stop
			backoff.WithClockProvider(q.clock),
		)}
		q.failures[key] = f
	}
	f.requeues++
	if q.metrics != nil {
		q.metrics.retries.Inc()
	}
	q.addAfterLocked(key, f.backoff.NextBackOff())
}

// NumRequeues reports how many times key has been rate-limited since it was
// last forgotten, so a worker can log how long a key has been failing.
func (q *Queue) NumRequeues(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if f := q.failures[key]; f != nil {
		return f.requeues
	}
	return 0
}

// AddAfter queues key once d has passed on the queue's clock, for objects that
// must be looked at again later (a pending timeout, a periodic check). A key
// waits at most once: if it is already waiting, the earlier time wins. A
// non-positive d is Add.
func (q *Queue) AddAfter(key string, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addAfterLocked(key, d)
}

func (q *Queue) addAfterLocked(key string, d time.Duration) {
	if q.shutdown {
		return
	}
	if d <= 0 {
		q.addLocked(key)
		return
	}
	at := q.clock.Now().Add(d)
	dk, ok := q.delayedBy[key]
	switch {
	case !ok:
		q.seq++
		dk = &delayedKey{key: key, at: at, seq: q.seq}
		heap.Push(&q.delayed, dk)
		q.delayedBy[key] = dk
	case at.Before(dk.at):
		dk.at = at
		heap.Fix(&q.delayed, dk.index)
	default:
		return
	}
	if q.delayed[0] == dk {
		select {
		case q.wake <- struct{}{}:
		default: // a poke is already pending
		}
	}
}

// Len reports how many keys are ready to be handed out, not counting keys
// held by workers or waiting for a delay.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ready)
}

// ShutDown makes Get return shutdown to every worker and stops the queue's
// goroutine, waiting for it. Later Adds are ignored. It is safe to call more
// than once.
func (q *Queue) ShutDown() {
	q.mu.Lock()
	if !q.shutdown {
		q.shutdown = true
		q.cond.Broadcast()
		close(q.stop)
	}
	q.mu.Unlock()
	<-q.done
}

// runDelays moves delayed keys into the queue as their time comes. It keeps
// one timer, for the earliest key, and is poked when that key changes.
func (q *Queue) runDelays() {
	defer close(q.done)
	var timer clock.Timer
	for {
		q.mu.Lock()
		now := q.clock.Now()
		for len(q.delayed) > 0 && !q.delayed[0].at.After(now) {
			dk := heap.Pop(&q.delayed).(*delayedKey)
			delete(q.delayedBy, dk.key)
			q.addLocked(dk.key)
		}
		// Reset the timer only when the earliest time has moved: the clock
		// read and the new timer then always belong to the same change.
		switch {
		case len(q.delayed) == 0:
			if timer != nil {
				timer.Stop()
				timer = nil
			}
			q.armedFor = time.Time{}
		case timer == nil || !q.delayed[0].at.Equal(q.armedFor):
			if timer != nil {
				timer.Stop()
			}
			q.armedFor = q.delayed[0].at
			timer = q.clock.NewTimer(q.armedFor.Sub(now))
		}
		var fired <-chan time.Time
		if timer != nil {
			fired = timer.C()
		}
		q.mu.Unlock()

		select {
		case <-q.stop:
			if timer != nil {
				timer.Stop()
			}
			return
		case <-q.wake:
		case <-fired:
			timer = nil
		}
	}
}

// delayedKey is a key waiting in the delay heap.
type delayedKey struct {
	key   string
	at    time.Time
	seq   uint64 // keeps keys with the same time in the order they were added
	index int    // position in the heap, for heap.Fix
}

// delayHeap is a min-heap of delayed keys by ready time; it implements
// heap.Interface.
type delayHeap []*delayedKey

func (h delayHeap) Len() int { return len(h) }

func (h delayHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}

func (h delayHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *delayHeap) Push(x any) {
	dk := x.(*delayedKey)
	dk.index = len(*h)
	*h = append(*h, dk)
}

func (h *delayHeap) Pop() any {
	old := *h
	n := len(old)
	dk := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return dk
}

package reconcile

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
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

// RateLimiter is client-go's per-item exponential failure limiter with b's
// bounds, spread by b's randomization factor when it has one.
func (b Backoff) RateLimiter() workqueue.TypedRateLimiter[string] {
	b = b.withDefaults()
	l := workqueue.NewTypedItemExponentialFailureRateLimiter[string](b.Base, b.Max)
	if b.RandomizationFactor <= 0 {
		return l
	}
	return &jittered{TypedRateLimiter: l, factor: b.RandomizationFactor}
}

// jittered spreads the delays of a limiter over [d*(1-f), d*(1+f)].
type jittered struct {
	workqueue.TypedRateLimiter[string]
	factor float64
}

func (j *jittered) When(key string) time.Duration {
	d := float64(j.TypedRateLimiter.When(key))
	return time.Duration(math.Round(d * (1 + j.factor*(2*rand.Float64()-1))))
}

// Queue is a work queue of object keys: client-go's rate-limiting work
// queue, the one kube-controller-manager's controllers share. It exists so
// that controllers are level-triggered: however many times a key is added
// before a worker gets to it, the worker sees it once and reads the current
// state; and a key is never handed to two workers at once, so reconciles of
// one object never race. Delays (AddAfter, AddRateLimited) run on the
// injected clock.
//
// What berth adds is the context of Get and the metrics' late binding:
// Metrics.Instrument names a queue's series after the queue is made, and
// the depth counts from the start. Every Queue must be shut down.
type Queue struct {
	workqueue.TypedRateLimitingInterface[string]
	metrics *queueSink
}

// NewQueue returns an empty queue whose delays run on clk (clock.RealClock{}
// if nil) and whose retries back off as b says. Call ShutDown to release it.
func NewQueue(clk clock.WithTicker, b Backoff) *Queue {
	if clk == nil {
		clk = clock.RealClock{}
	}
	sink := &queueSink{}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(b.RateLimiter(), workqueue.TypedRateLimitingQueueConfig[string]{
		// The name only turns the metrics on; the series are named when
		// the queue is instrumented.
		Name:            "queue",
		MetricsProvider: sink,
		Clock:           clk,
	})
	return &Queue{TypedRateLimitingInterface: q, metrics: sink}
}

// Get blocks until a key is ready and hands it to the caller, who must call
// Done(key) when finished with it. It returns shutdown true, and no key, once
// the queue is shut down or ctx is done: a worker should then return. The
// queue's owner shuts it down when ctx is done, which wakes a Get that
// waits. Keys still queued then are dropped, not handed out with a done
// context; a level-triggered controller lists them again when it starts.
func (q *Queue) Get(ctx context.Context) (key string, shutdown bool) {
	if ctx.Err() != nil {
		return "", true
	}
	key, shutdown = q.TypedRateLimitingInterface.Get()
	if shutdown {
		return "", true
	}
	if ctx.Err() != nil {
		q.Done(key)
		return "", true
	}
	return key, false
}

// queueSink is the workqueue.MetricsProvider of one queue. client-go asks
// for the queue's metrics when the queue is made, before Instrument names
// them, so the sink counts depth and the unfinished work itself (read at
// scrape time) and passes the rest to the series bound later; what happens
// before that is not counted, as with a queue instrumented late.
type queueSink struct {
	bound      atomic.Pointer[queueMetrics]
	depth      atomic.Int64
	unfinished atomic.Uint64 // float64 bits, seconds
	longest    atomic.Uint64 // float64 bits, seconds
}

func (s *queueSink) NewDepthMetric(string) workqueue.GaugeMetric     { return depthGauge{s} }
func (s *queueSink) NewAddsMetric(string) workqueue.CounterMetric    { return boundCounter{s, false} }
func (s *queueSink) NewRetriesMetric(string) workqueue.CounterMetric { return boundCounter{s, true} }
func (s *queueSink) NewLatencyMetric(string) workqueue.HistogramMetric {
	return boundHistogram{s, false}
}
func (s *queueSink) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return boundHistogram{s, true}
}

func (s *queueSink) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return floatGauge{&s.unfinished}
}

func (s *queueSink) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return floatGauge{&s.longest}
}

// gauges reads the queue's depth and how long its workers have held the
// keys they hold, as client-go last computed it.
func (s *queueSink) gauges() queueGauges {
	return queueGauges{
		depth:      max(0, int(s.depth.Load())),
		unfinished: math.Float64frombits(s.unfinished.Load()),
		longest:    math.Float64frombits(s.longest.Load()),
	}
}

type depthGauge struct{ s *queueSink }

func (g depthGauge) Inc() { g.s.depth.Add(1) }
func (g depthGauge) Dec() { g.s.depth.Add(-1) }

type floatGauge struct{ v *atomic.Uint64 }

func (g floatGauge) Set(v float64) { g.v.Store(math.Float64bits(v)) }

// boundCounter is adds_total, or retries_total when retries is set.
type boundCounter struct {
	s       *queueSink
	retries bool
}

func (c boundCounter) Inc() {
	switch m := c.s.bound.Load(); {
	case m == nil:
	case c.retries:
		m.retries.Inc()
	default:
		m.adds.Inc()
	}
}

// boundHistogram is queue_duration_seconds, or work_duration_seconds when
// work is set.
type boundHistogram struct {
	s    *queueSink
	work bool
}

func (h boundHistogram) Observe(v float64) {
	switch m := h.s.bound.Load(); {
	case m == nil:
	case h.work:
		m.workDuration.Observe(v)
	default:
		m.queueDuration.Observe(v)
	}
}

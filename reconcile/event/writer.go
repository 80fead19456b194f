package event

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Defaults of Options.
const (
	// DefaultWindow: a repeat within ten minutes of the last one bumps the
	// Event's count; a later one starts a new Event.
	DefaultWindow = 10 * time.Minute
	// DefaultBurst and DefaultRefill are the rate limit per component and
	// object, Kubernetes' event spam filter: 25 events at once, then one
	// every five minutes. A count bump costs a token too, so an object
	// that fails in a loop settles at one write per five minutes.
	DefaultBurst  = 25
	DefaultRefill = 5 * time.Minute
	// DefaultQueueSize bounds the events waiting to be written; past it
	// Event drops them rather than block its caller.
	DefaultQueueSize = 1024
	// DefaultCacheSize bounds how many keys the correlator and the rate
	// limiter remember, least recently used forgotten first.
	DefaultCacheSize = 4096
	// batchSize bounds the events written in one store transaction.
	batchSize = 256
)

var eventKind = api.KindOf(&api.Event{})

// Options configure a Writer; the zero value takes the defaults.
type Options struct {
	// Clock stamps events and drives the rate limit; the real clock when
	// nil.
	Clock     clock.PassiveClock
	Window    time.Duration
	Burst     int
	Refill    time.Duration
	QueueSize int
	CacheSize int
	// Logger receives write failures; slog.Default() when nil.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Refill <= 0 {
		o.Refill = DefaultRefill
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Writer writes the events of every Recorder made from it to the store:
// it owns the queue, the correlator, the rate limiter and the goroutine
// (Run) that drains the queue, so that recording never blocks a
// controller on a store write.
type Writer struct {
	store *store.Store
	opts  Options
	queue chan entry

	mu      sync.Mutex
	seen    *lru[correlationKey, seen]
	buckets *lru[limitKey, *bucket]

	dropped prometheus.Counter
	limited prometheus.Counter
	failed  prometheus.Counter
}

// entry is one event on its way to the store.
type entry struct {
	source                     api.EventSource
	object                     api.ObjectReference
	eventType, reason, message string
	at                         time.Time
}

// NewWriter returns a Writer over s; Run starts its writing goroutine.
// Recorder.Record writes inside a caller's transaction and needs no Run.
func NewWriter(s *store.Store, opts Options) *Writer {
	opts.defaults()
	return &Writer{
		store:   s,
		opts:    opts,
		queue:   make(chan entry, opts.QueueSize),
		seen:    newLRU[correlationKey, seen](opts.CacheSize),
		buckets: newLRU[limitKey, *bucket](opts.CacheSize),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "events", Name: "dropped_total",
			Help: "Events dropped because the write queue was full.",
		}),
		limited: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "events", Name: "rate_limited_total",
			Help: "Events not written because their object was over its rate limit.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "events", Name: "write_failures_total",
			Help: "Events the store refused or failed to write.",
		}),
	}
}

// Describe and Collect make the Writer a prometheus.Collector of its
// counters (berth_events_dropped_total and the like), for the server's
// registry.
func (w *Writer) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range []prometheus.Collector{w.dropped, w.limited, w.failed} {
		c.Describe(ch)
	}
}

// Collect: see Describe.
func (w *Writer) Collect(ch chan<- prometheus.Metric) {
	for _, c := range []prometheus.Collector{w.dropped, w.limited, w.failed} {
		c.Collect(ch)
	}
}

// Recorder returns a Recorder whose events name component (and host, if
// any) as their source.
func (w *Writer) Recorder(component, host string) *Recorder {
	return &Recorder{w: w, source: api.EventSource{Component: component, Host: host}}
}

// Run writes queued events until ctx ends, a batch per store transaction,
// then writes what is still queued and returns.
func (w *Writer) Run(ctx context.Context) {
	batch := make([]entry, 0, batchSize)
	for {
		select {
		case <-ctx.Done():
			w.flush(context.WithoutCancel(ctx), batch)
			return
		case e := <-w.queue:
			batch = append(batch[:0], e)
		}
		batch = w.drain(batch)
		w.write(ctx, batch)
	}
}

// drain adds what is queued to batch, up to batchSize.
func (w *Writer) drain(batch []entry) []entry {
	for len(batch) < batchSize {
		select {
		case e := <-w.queue:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// flush writes what is left in the queue at shutdown.
func (w *Writer) flush(ctx context.Context, batch []entry) {
	for {
		batch = w.drain(batch[:0])
		if len(batch) == 0 {
			return
		}
		w.write(ctx, batch)
	}
}

// write records a batch in one transaction. An event the store refuses
// (its namespace is gone, say) is counted and skipped, not the batch.
func (w *Writer) write(ctx context.Context, batch []entry) {
	var errs []error
	_, err := w.store.Txn(ctx, func(tx *store.Txn) error {
		errs = errs[:0]
		for _, e := range batch {
			if err := w.record(tx, e); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	if err != nil {
		w.failed.Add(float64(len(batch)))
		if !errors.Is(err, store.ErrClosed) {
			w.opts.Logger.Warn("write events", "events", len(batch), "err", err)
		}
		return
	}
	if len(errs) > 0 {
		w.failed.Add(float64(len(errs)))
		w.opts.Logger.Debug("write events", "failed", len(errs), "err", errors.Join(errs...))
	}
}

// enqueue hands e to Run without waiting: a full queue drops it.
func (w *Writer) enqueue(e entry) {
	select {
	case w.queue <- e:
	default:
		w.dropped.Inc()
	}
}

// record writes e in tx: a repeat of an Event written within the window
// bumps its count, anything else is a new Event named
// <object name>.<hex nanoseconds>, as in Kubernetes. An event over its
// object's rate limit is dropped and counted.
func (w *Writer) record(tx *store.Txn, e entry) error {
	key := correlationKey{source: e.source, object: e.object, eventType: e.eventType, reason: e.reason, message: e.message}
	w.mu.Lock()
	lk := limitKey{source: e.source, object: e.object}
	b, ok := w.buckets.get(lk)
	if !ok {
		b = &bucket{tokens: float64(w.opts.Burst), at: e.at}
		w.buckets.put(lk, b)
	}
	allowed := b.take(e.at, w.opts.Burst, w.opts.Refill)
	prev, found := w.seen.get(key)
	w.mu.Unlock()
	if !allowed {
		w.limited.Inc()
		return nil
	}
	ns := namespaceOf(e.object)
	at := metav1.NewTime(e.at)
	if found && e.at.Sub(prev.last) < w.opts.Window {
		obj, err := tx.Get(eventKind, ns, prev.name)
		switch {
		case err == nil:
			ev := obj.(*api.Event).DeepCopy()
			ev.Count = max(ev.Count, 1) + 1
			if e.at.After(ev.LastTimestamp.Time) {
				ev.LastTimestamp = at
			}
			if _, err := tx.Update(ev); err != nil {
				return fmt.Errorf("record event %s on %s: %w", e.reason, describe(e.object), err)
			}
			w.remember(key, seen{name: prev.name, last: e.at})
			return nil
		case !store.IsNotFound(err):
			return fmt.Errorf("record event %s on %s: %w", e.reason, describe(e.object), err)
		}
		// Expired or never committed: a new Event.
	}
	ev := &api.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns},
		InvolvedObject: e.object,
		Reason:         e.reason,
		Message:        e.message,
		Source:         e.source,
		FirstTimestamp: at,
		LastTimestamp:  at,
		Count:          1,
		Type:           e.eventType,
	}
	// Two events of one object in one nanosecond: take the next free name.
	for n := e.at.UnixNano(); ; n++ {
		ev.Name = e.object.Name + "." + strconv.FormatInt(n, 16)
		if _, err := tx.Get(eventKind, ns, ev.Name); store.IsNotFound(err) {
			break
		}
	}
	if _, err := tx.Create(ev); err != nil {
		return fmt.Errorf("record event %s on %s: %w", e.reason, describe(e.object), err)
	}
	w.remember(key, seen{name: ev.Name, last: e.at})
	return nil
}

func (w *Writer) remember(k correlationKey, s seen) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen.put(k, s)
}

// namespaceOf is where an object's events live: its namespace, or default
// for a cluster-scoped object, as in Kubernetes.
func namespaceOf(ref api.ObjectReference) string {
	if ref.Namespace == "" {
		return api.NamespaceDefault
	}
	return ref.Namespace
}

func describe(ref api.ObjectReference) string {
	if ref.Namespace == "" {
		return ref.Kind + " " + ref.Name
	}
	return ref.Kind + " " + ref.Namespace + "/" + ref.Name
}

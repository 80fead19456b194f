package reconcile

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus collectors of the controller runtime, under
// the names client-go's workqueue and controller-runtime give them
// (berth_workqueue_* by queue name, berth_controller_* by controller), so
// that an operator can see a controller falling behind or failing. One
// Metrics serves every controller of a process: Instrument each before it
// runs, and register the Metrics once. Depth, unfinished work and the
// longest running processor are read from the queues at scrape time (the
// work queue updates the last two every half second on its clock); the
// rest costs a counter or a histogram observation per key.
type Metrics struct {
	adds, retries               *prometheus.CounterVec
	queueDuration, workDuration *prometheus.HistogramVec
	reconciles, errors          *prometheus.CounterVec
	depth, unfinished, longest  *prometheus.Desc

	mu     sync.Mutex
	queues map[string]*Queue
}

// queueMetrics are one queue's children of the Metrics vectors, bound once
// so that the hot path does no label lookup.
type queueMetrics struct {
	adds, retries               prometheus.Counter
	queueDuration, workDuration prometheus.Observer
}

// controllerMetrics are one controller's children of the Metrics vectors.
type controllerMetrics struct {
	success, errored, requeueAfter prometheus.Counter
	errors                         prometheus.Counter
}

// Results of berth_controller_reconcile_total, controller-runtime's.
const (
	ResultSuccess      = "success"
	ResultError        = "error"
	ResultRequeueAfter = "requeue_after"
)

// durationBuckets are client-go's workqueue buckets: 10ns to 10s by
// decades.
var durationBuckets = prometheus.ExponentialBuckets(10e-9, 10, 10)

// NewMetrics returns the controller runtime's collectors, with no
// controller instrumented yet.
func NewMetrics() *Metrics {
	const ns = "berth"
	queue := []string{"name"}
	controller := []string{"controller"}
	return &Metrics{
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: "workqueue", Name: "adds_total",
			Help: "Keys added to a controller's work queue (an add of a key already waiting is not counted).",
		}, queue),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: "workqueue", Name: "retries_total",
			Help: "Keys put back on a work queue with back-off after a failed reconcile.",
		}, queue),
		queueDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "How long a key waits in a work queue before a worker takes it.",
			Buckets: durationBuckets,
		}, queue),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "How long a worker holds a key: one reconcile.",
			Buckets: durationBuckets,
		}, queue),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: "controller", Name: "reconcile_total",
			Help: "Reconciles by controller and result (success, error, requeue_after).",
		}, []string{"controller", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: "controller", Name: "reconcile_errors_total",
			Help: "Reconciles that failed (returned an error or panicked), retried or not.",
		}, controller),
		depth: prometheus.NewDesc("berth_workqueue_depth",
			"Keys waiting in a work queue for a worker.", queue, nil),
		unfinished: prometheus.NewDesc("berth_workqueue_unfinished_work_seconds",
			"Seconds the keys workers hold now have been held, summed: a value that grows and never drops means a stuck worker.", queue, nil),
		longest: prometheus.NewDesc("berth_workqueue_longest_running_processor_seconds",
			"Seconds the longest-held key of a work queue has been held.", queue, nil),
		queues: map[string]*Queue{},
	}
}

// Instrument makes c report to m under its name. Call it before c runs,
// once per controller; a controller of the same name replaces the earlier
// one in the queue gauges.
func (m *Metrics) Instrument(c *Controller) {
	name := c.name
	c.queue.instrument(m.forQueue(name))
	c.metrics.Store(&controllerMetrics{
		success:      m.reconciles.WithLabelValues(name, ResultSuccess),
		errored:      m.reconciles.WithLabelValues(name, ResultError),
		requeueAfter: m.reconciles.WithLabelValues(name, ResultRequeueAfter),
		errors:       m.errors.WithLabelValues(name),
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queues[name] = c.queue
}

// forQueue binds the queue series of name.
func (m *Metrics) forQueue(name string) *queueMetrics {
	return &queueMetrics{
		adds:          m.adds.WithLabelValues(name),
		retries:       m.retries.WithLabelValues(name),
		queueDuration: m.queueDuration.WithLabelValues(name),
		workDuration:  m.workDuration.WithLabelValues(name),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.vectors() {
		c.Describe(ch)
	}
	ch <- m.depth
	ch <- m.unfinished
	ch <- m.longest
}

// Collect implements prometheus.Collector: the vectors, and the gauges
// read from each queue now.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.vectors() {
		c.Collect(ch)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, q := range m.queues {
		g := q.gauges()
		ch <- prometheus.MustNewConstMetric(m.depth, prometheus.GaugeValue, float64(g.depth), name)
		ch <- prometheus.MustNewConstMetric(m.unfinished, prometheus.GaugeValue, g.unfinished, name)
		ch <- prometheus.MustNewConstMetric(m.longest, prometheus.GaugeValue, g.longest, name)
	}
}

func (m *Metrics) vectors() []prometheus.Collector {
	return []prometheus.Collector{m.adds, m.retries, m.queueDuration, m.workDuration, m.reconciles, m.errors}
}

// observe counts one reconcile's result; m may be nil.
func (m *controllerMetrics) observe(res Result, err error) {
	switch {
	case m == nil:
	case err != nil:
		m.errored.Inc()
		m.errors.Inc()
	case res.RequeueAfter > 0:
		m.requeueAfter.Inc()
	default:
		m.success.Inc()
	}
}

// queueGauges are what a queue reports at scrape time.
type queueGauges struct {
	depth               int
	unfinished, longest float64 // seconds
}

// instrument makes q report to qm from now on.
func (q *Queue) instrument(qm *queueMetrics) { q.metrics.bound.Store(qm) }

// gauges reads the queue's depth and how long its workers hold keys.
func (q *Queue) gauges() queueGauges { return q.metrics.gauges() }

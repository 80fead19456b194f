package sched

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a scheduling attempt, kube-scheduler's label values.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// maxAttemptsLabel caps the attempts label of the end-to-end histogram, as
// kube-scheduler does, so a pod tried many times adds no new series.
const maxAttemptsLabel = 15

// metrics are the scheduler's Prometheus collectors, under kube-scheduler's
// names with berth's prefix. The counters and queue gauges are read from
// the scheduler's own counters at scrape time; only the two histograms are
// written per pod, through children bound once.
type metrics struct {
	sched *Scheduler

	attempt *prometheus.HistogramVec
	e2e     *prometheus.HistogramVec
	// attemptBy and e2eBy are the bound children: attemptBy by result,
	// e2eBy by attempts (index maxAttemptsLabel is "15+"), each bound when
	// first used so that /metrics shows only the attempt counts seen.
	attemptBy map[string]prometheus.Observer
	e2eBy     [maxAttemptsLabel + 1]lazyObserver

	pending, attempts *prometheus.Desc
}

func newMetrics(s *Scheduler) *metrics {
	m := &metrics{
		sched: s,
		attempt: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth", Subsystem: "scheduler", Name: "scheduling_attempt_duration_seconds",
			Help:    "Scheduling attempt latency: finding a node and, for a scheduled pod, binding it; by result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result"}),
		e2e: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth", Subsystem: "scheduler", Name: "pod_scheduling_sli_duration_seconds",
			Help:    "From a pod entering the scheduling queue to its binding, over every attempt; by attempts (15+ beyond 15).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 20),
		}, []string{"attempts"}),
		attemptBy: map[string]prometheus.Observer{},
		pending: prometheus.NewDesc("berth_scheduler_pending_pods",
			"Pending pods by queue: active (to be tried), backoff (failed, waiting out their back-off), unschedulable (waiting for a change that could help).",
			[]string{"queue"}, nil),
		attempts: prometheus.NewDesc("berth_scheduler_schedule_attempts_total",
			"Scheduling attempts by result: scheduled (bound), unschedulable (no node fits), error.",
			[]string{"result"}, nil),
	}
	for _, r := range []string{resultScheduled, resultUnschedulable, resultError} {
		m.attemptBy[r] = m.attempt.WithLabelValues(r)
	}
	return m
}

// lazyObserver is a child of a vector bound on its first observation.
type lazyObserver struct {
	once sync.Once
	o    prometheus.Observer
}

// observeAttempt records an attempt that began at start.
func (m *metrics) observeAttempt(result string, start, now time.Time) {
	m.attemptBy[result].Observe(now.Sub(start).Seconds())
}

// observeBound records a pod bound after attempts attempts, queued first
// at added.
func (m *metrics) observeBound(attempts int, added, now time.Time) {
	i := min(max(attempts, 0), maxAttemptsLabel)
	lo := &m.e2eBy[i]
	lo.once.Do(func() {
		label := strconv.Itoa(i)
		if i == maxAttemptsLabel {
			label += "+"
		}
		lo.o = m.e2e.WithLabelValues(label)
	})
	lo.o.Observe(now.Sub(added).Seconds())
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.attempt.Describe(ch)
	m.e2e.Describe(ch)
	ch <- m.pending
	ch <- m.attempts
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.attempt.Collect(ch)
	m.e2e.Collect(ch)
	st := m.sched.Stats()
	for queue, n := range map[string]int{"active": st.Active, "backoff": st.Backoff, "unschedulable": st.Parked} {
		ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(n), queue)
	}
	for result, n := range map[string]uint64{resultScheduled: st.Bound, resultUnschedulable: st.Unschedulable, resultError: st.Errors} {
		ch <- prometheus.MustNewConstMetric(m.attempts, prometheus.CounterValue, float64(n), result)
	}
}

// Collector returns the scheduler's Prometheus metrics, for the control
// plane to register once: berth_scheduler_pending_pods{queue},
// berth_scheduler_schedule_attempts_total{result},
// berth_scheduler_scheduling_attempt_duration_seconds{result} and
// berth_scheduler_pod_scheduling_sli_duration_seconds{attempts}.
func (s *Scheduler) Collector() prometheus.Collector { return s.metrics }

package ingress

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the proxy's Prometheus metrics, per Ingress and backend,
// named berth_ingress_*. Each route's series are looked up once, when a
// table is put in use, not at each request; the series of an Ingress or
// backend that left the table are deleted with it.
type Metrics struct {
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	upstreamErrors *prometheus.CounterVec

	mu sync.Mutex
	// live are the series of the table in use, by label values.
	live map[seriesKey]*series
	// unrouted are the series of requests no route matched.
	unrouted *series
}

// seriesKey is the namespace, ingress and backend labels.
type seriesKey struct{ namespace, ingress, backend string }

// series are one Ingress's and backend's metrics, resolved.
type series struct {
	key            seriesKey
	requests       *prometheus.CounterVec
	duration       prometheus.Observer
	upstreamErrors prometheus.Counter
	// codes holds the requests counter of each status code seen, an
	// int → prometheus.Counter.
	codes sync.Map
	// gone is set when the series are deleted: a request still in
	// flight on the old table makes no new one.
	gone atomic.Bool
}

// NewMetrics makes the metrics; Register adds them to a registry.
func NewMetrics() *Metrics {
	labels := []string{"namespace", "ingress", "backend"}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "ingress", Name: "requests_total",
			Help: "Requests the Ingress proxy answered, by Ingress, backend (namespace/service:port) and status code.",
		}, append(labels, "code")),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth", Subsystem: "ingress", Name: "request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its answer, by Ingress and backend.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, labels),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "ingress", Name: "upstream_errors_total",
			Help: "Tries to reach an endpoint that failed before an answer (refused, reset, timed out), by Ingress and backend.",
		}, labels),
		live: map[seriesKey]*series{},
	}
	m.unrouted = m.newSeries(seriesKey{})
	return m
}

// Register adds the metrics to r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.upstreamErrors} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Metrics) newSeries(k seriesKey) *series {
	return &series{
		key:            k,
		requests:       m.requests,
		duration:       m.duration.WithLabelValues(k.namespace, k.ingress, k.backend),
		upstreamErrors: m.upstreamErrors.WithLabelValues(k.namespace, k.ingress, k.backend),
	}
}

func keyOf(r *Route) seriesKey {
	k := seriesKey{namespace: r.Namespace, ingress: r.Ingress}
	if r.Backend != nil {
		k.backend = r.Backend.Name
	}
	return k
}

// resolve gives each route of a table its series, and deletes the
// series of the Ingresses and backends no longer in it.
func (m *Metrics) resolve(t *Table) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	live := make(map[seriesKey]*series, len(m.live))
	t.eachRoute(func(r *Route) {
		k := keyOf(r)
		s := live[k]
		if s == nil {
			if s = m.live[k]; s == nil {
				s = m.newSeries(k)
			}
			live[k] = s
		}
		r.series = s
	})
	for k := range m.live {
		if _, ok := live[k]; ok {
			continue
		}
		m.live[k].gone.Store(true)
		labels := prometheus.Labels{"namespace": k.namespace, "ingress": k.ingress, "backend": k.backend}
		m.requests.DeletePartialMatch(labels)
		m.duration.Delete(labels)
		m.upstreamErrors.Delete(labels)
	}
	m.live = live
}

// seriesOf is a route's series; a route of a table the metrics did not
// resolve (as in tests that call Build alone) is looked up now.
func (m *Metrics) seriesOf(r *Route) *series {
	switch {
	case m == nil:
		return nil
	case r == nil:
		return m.unrouted
	case r.series != nil:
		return r.series
	}
	return m.newSeries(keyOf(r))
}

func (s *series) observe(code int, d time.Duration) {
	if s == nil {
		return
	}
	c, ok := s.codes.Load(code)
	if !ok {
		if s.gone.Load() {
			return
		}
		c, _ = s.codes.LoadOrStore(code, s.requests.WithLabelValues(s.key.namespace, s.key.ingress, s.key.backend, strconv.Itoa(code)))
	}
	c.(prometheus.Counter).Inc()
	s.duration.Observe(d.Seconds())
}

func (s *series) upstreamError() {
	if s != nil {
		s.upstreamErrors.Inc()
	}
}

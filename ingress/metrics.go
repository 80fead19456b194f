package ingress

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the proxy's Prometheus metrics, per Ingress and backend,
// named berth_ingress_*.
type Metrics struct {
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	upstreamErrors *prometheus.CounterVec
}

// NewMetrics makes the metrics; Register adds them to a registry.
func NewMetrics() *Metrics {
	labels := []string{"namespace", "ingress", "backend"}
	return &Metrics{
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
	}
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

func routeLabels(r *Route) (ns, ing, backend string) {
	if r == nil {
		return "", "", ""
	}
	if r.Backend != nil {
		backend = r.Backend.Name
	}
	return r.Namespace, r.Ingress, backend
}

func (m *Metrics) observe(r *Route, code int, d time.Duration) {
	if m == nil {
		return
	}
	ns, ing, be := routeLabels(r)
	m.requests.WithLabelValues(ns, ing, be, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(ns, ing, be).Observe(d.Seconds())
}

func (m *Metrics) upstreamError(r *Route) {
	if m == nil {
		return
	}
	ns, ing, be := routeLabels(r)
	m.upstreamErrors.WithLabelValues(ns, ing, be).Inc()
}

package apiserver

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/berth-dev/berth/store"
)

// metrics are the server's Prometheus collectors, on their own registry so
// that berth's /metrics holds berth's names only.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	watches  *prometheus.GaugeVec
}

func newMetrics(reg *prometheus.Registry, st *store.Store, v VersionInfo) (*metrics, error) {
	m := &metrics{
		registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "apiserver", Name: "requests_total",
			Help: "API requests by verb, resource and HTTP status code.",
		}, []string{"verb", "resource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth", Subsystem: "apiserver", Name: "request_duration_seconds",
			Help:    "Latency of API requests by verb and resource, watches excepted.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"verb", "resource"}),
		watches: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "berth", Subsystem: "apiserver", Name: "watches",
			Help: "Watches open, by resource.",
		}, []string{"resource"}),
	}
	revision := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "berth", Subsystem: "store", Name: "revision",
		Help: "The store's newest revision readers see.",
	}, func() float64 { return float64(st.Revision()) })
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "berth", Name: "build_info",
		Help:        "Always 1; the labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": v.Version, "commit": v.Commit, "goversion": v.GoVersion},
	})
	build.Set(1)
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.watches, revision, build} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe records one finished request.
func (m *metrics) observe(rec *requestRecord, code int, d time.Duration) {
	m.requests.WithLabelValues(rec.verb, rec.resource, strconv.Itoa(code)).Inc()
	if !rec.long {
		m.latency.WithLabelValues(rec.verb, rec.resource).Observe(d.Seconds())
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

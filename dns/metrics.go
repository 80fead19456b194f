package dns

import (
	"net/http"
	"strconv"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// typeLabels are the query types counted under their own name; any other
// is "other", so that arbitrary packets cannot grow the label set.
var typeLabels = [...]uint16{
	dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypeCNAME, dns.TypeTXT, dns.TypeSOA,
	dns.TypeNS, dns.TypePTR, dns.TypeMX, dns.TypeANY,
}

const otherType = len(typeLabels)

// commonRcodes get their counters made up front, so that the query path
// finds them in an array.
var commonRcodes = [...]int{
	dns.RcodeSuccess, dns.RcodeFormatError, dns.RcodeServerFailure, dns.RcodeNameError,
	dns.RcodeNotImplemented, dns.RcodeRefused,
}

// Metrics are the DNS server's Prometheus collectors, on their own
// registry, served on their own listener.
type Metrics struct {
	registry  *prometheus.Registry
	requests  *prometheus.CounterVec
	duration  prometheus.Histogram
	forwarded prometheus.Counter
	// writeFailures counts answers the socket would not take.
	writeFailures prometheus.Counter
	// counters[type][rcode] for the common rcodes.
	counters [otherType + 1][dns.RcodeRefused + 1]prometheus.Counter
}

// NewMetrics registers the server's collectors on a new registry; records
// reports how many records the table holds.
func NewMetrics(records func() int) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "dns", Name: "requests_total",
			Help: "DNS requests answered, by query type and response code.",
		}, []string{"type", "rcode"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "berth", Subsystem: "dns", Name: "request_duration_seconds",
			Help:    "Time from a request's arrival to its answer being written, forwarding included.",
			Buckets: []float64{0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "dns", Name: "forwarded_requests_total",
			Help: "DNS requests for names outside the cluster domain sent to the upstream.",
		}),
		writeFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "dns", Name: "write_failures_total",
			Help: "DNS answers that could not be sent: writing them to the socket failed.",
		}),
	}
	recordsGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "berth", Subsystem: "dns", Name: "records",
		Help: "Resource records the DNS table holds.",
	}, func() float64 { return float64(records()) })
	m.registry.MustRegister(m.requests, m.duration, m.forwarded, m.writeFailures, recordsGauge)
	for ti := range m.counters {
		for _, rc := range commonRcodes {
			m.counters[ti][rc] = m.requests.WithLabelValues(typeLabel(ti), rcodeLabel(rc))
		}
	}
	return m
}

func typeIndex(qtype uint16) int {
	for i, t := range typeLabels {
		if t == qtype {
			return i
		}
	}
	return otherType
}

func typeLabel(i int) string {
	if i == otherType {
		return "other"
	}
	return dns.TypeToString[typeLabels[i]]
}

// rcodeLabel names an answer's rcode. Extended rcode 16 is BADVERS in a
// message's header (RFC 6891); miekg/dns names it BADSIG, its meaning in
// a TSIG record's error field, which no answer of berth's carries.
func rcodeLabel(rc int) string {
	if rc == dns.RcodeBadVers {
		return "BADVERS"
	}
	if s, ok := dns.RcodeToString[rc]; ok {
		return s
	}
	return strconv.Itoa(rc)
}

// observe counts one answered request.
func (m *Metrics) observe(qtype uint16, rcode int, d time.Duration) {
	ti := typeIndex(qtype)
	if rcode >= 0 && rcode < len(m.counters[ti]) && m.counters[ti][rcode] != nil {
		m.counters[ti][rcode].Inc()
	} else {
		m.requests.WithLabelValues(typeLabel(ti), rcodeLabel(rcode)).Inc()
	}
	m.duration.Observe(d.Seconds())
}

// Registry returns the registry the collectors are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

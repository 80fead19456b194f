package proxy

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

// BenchmarkEndpointReadyToRules: 1,000 Services of 10 endpoints each
// (10,000 endpoint chains) through a real control plane, the API and
// real nftables in a namespace of the benchmark's. Each op turns one
// endpoint unready and then ready again, and measures the second: from
// the EndpointSlice's write to the end of the nftables transaction that
// sends traffic to it. Run it with -benchtime=200x for a p99.
func BenchmarkEndpointReadyToRules(b *testing.B) {
	const services, endpoints = 1000, 10
	c := startCluster(b, services, endpoints)
	vips := make([]netip.Addr, services)
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		k := (i * 7) % services
		if !vips[k].IsValid() {
			vips[k] = c.vipOf(b, k)
		}
		b.StopTimer()
		c.setReady(b, k, endpoints, vips[k], false)
		b.StartTimer()
		lat = append(lat, c.setReady(b, k, endpoints, vips[k], true))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

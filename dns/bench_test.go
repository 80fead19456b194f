package dns

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"

	"github.com/miekg/dns"
)

const (
	benchServices  = 1000
	benchEndpoints = 10
)

// benchObjects are 1,000 services with 10 ready endpoints each, spread over
// ten namespaces, as the dnsperf generator loads them.
func benchObjects() []any {
	var objs []any
	for i := range benchServices {
		ns, name := fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("svc-%d", i)
		objs = append(objs, svc(ns, name), manyEndpoints(ns, name, benchEndpoints, i*benchEndpoints+1))
	}
	return objs
}

func benchTable(b *testing.B) *Table {
	tbl := newTable(b)
	fill(b, tbl, benchObjects()...)
	return tbl
}

var benchQuestions = []struct {
	name  string
	qname string
	qtype uint16
}{
	{"A", "svc-417.ns-7.svc.cluster.local.", dns.TypeA},
	{"SRV", "_http._tcp.svc-417.ns-7.svc.cluster.local.", dns.TypeSRV},
	{"NXDOMAIN", "missing-417.ns-7.svc.cluster.local.", dns.TypeA},
}

// BenchmarkLookup is the pure answer path: the table alone.
func BenchmarkLookup(b *testing.B) {
	tbl := benchTable(b)
	for _, q := range benchQuestions {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if a := tbl.Lookup(q.qname, q.qtype); a.Forward {
					b.Fatal("forward")
				}
			}
		})
	}
}

// discard is a ResponseWriter that writes nowhere: the handler's cost
// without the socket's.
type discard struct{ udp bool }

func (d discard) LocalAddr() net.Addr {
	if d.udp {
		return &net.UDPAddr{}
	}
	return &net.TCPAddr{}
}
func (discard) RemoteAddr() net.Addr        { return &net.UDPAddr{} }
func (discard) WriteMsg(*dns.Msg) error     { return nil }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) Close() error                { return nil }
func (discard) TsigStatus() error           { return nil }
func (discard) TsigTimersOnly(bool)         {}
func (discard) Hijack()                     {}

// BenchmarkServeDNS is the handler over UDP with EDNS0 (as dnsperf -e
// asks): lookup, answer from packed sections (or, under general/, a
// message packed by miekg/dns with its truncation check), metrics.
func BenchmarkServeDNS(b *testing.B) {
	tbl := benchTable(b)
	fast := NewHandler(tbl, nil, NewMetrics(tbl.Records))
	general := NewHandler(tbl, nil, NewMetrics(tbl.Records))
	general.general = true
	ctx := context.Background()
	for _, q := range benchQuestions {
		for _, path := range []string{"", "general/"} {
			h := fast
			if path != "" {
				h = general
			}
			b.Run(path+q.name, func(b *testing.B) {
				r := new(dns.Msg)
				r.SetQuestion(q.qname, q.qtype)
				r.SetEdns0(1232, false)
				w := discard{udp: true}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := h.ServeDNS(ctx, w, r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkServePacket is a datagram as the UDP readers serve it: parsed
// from the bytes, answered from packed sections, written.
func BenchmarkServePacket(b *testing.B) {
	tbl := benchTable(b)
	h := NewHandler(tbl, nil, NewMetrics(tbl.Records))
	ctx := context.Background()
	sc := newUDPScratch()
	for _, q := range benchQuestions {
		b.Run(q.name, func(b *testing.B) {
			r := new(dns.Msg)
			r.SetQuestion(q.qname, q.qtype)
			r.SetEdns0(1232, false)
			raw, err := r.Pack()
			if err != nil {
				b.Fatal(err)
			}
			w := discard{udp: true}
			b.ReportAllocs()
			for b.Loop() {
				if h.servePacket(ctx, w, raw, sc) {
					b.Fatal("forward")
				}
			}
		})
	}
}

// BenchmarkTableMemory reports the heap the table holds per record, for
// 1,000 services × 10 endpoints.
func BenchmarkTableMemory(b *testing.B) {
	objs := benchObjects()
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tbl := newTable(b)
		fill(b, tbl, objs...)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(tbl.Records()), "bytes/record")
		b.ReportMetric(float64(tbl.Records()), "records")
		runtime.KeepAlive(tbl)
	}
}

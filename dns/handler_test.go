package dns

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/miekg/dns"
)

// serve runs one packet through a handler with a recorder and returns the
// answer, or nil if it was dropped.
func serve(t testing.TB, h *Handler, r *dns.Msg, udp bool) *dns.Msg {
	t.Helper()
	w := &recorder{udp: udp}
	if _, err := h.ServeDNS(context.Background(), w, r); err != nil {
		t.Fatalf("ServeDNS: %v", err)
	}
	switch len(w.out) {
	case 0:
		return nil
	case 1:
	default:
		t.Fatalf("%d answers to one request", len(w.out))
	}
	m := new(dns.Msg)
	if err := m.Unpack(w.out[0]); err != nil {
		t.Fatalf("the answer does not unpack: %v", err)
	}
	return m
}

func TestHandlerEdgeCases(t *testing.T) {
	h := NewHandler(testZone(t), nil, NewMetrics(func() int { return 0 }))
	q := func(mod func(*dns.Msg)) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
		mod(m)
		return m
	}
	tests := []struct {
		name  string
		req   *dns.Msg
		rcode int // -1: dropped
	}{
		{"a response is dropped", q(func(m *dns.Msg) { m.Response = true }), -1},
		{"two questions", q(func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }), dns.RcodeFormatError},
		{"no question", q(func(m *dns.Msg) { m.Question = nil }), dns.RcodeFormatError},
		{"NOTIFY", q(func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }), dns.RcodeNotImplemented},
		{"class CHAOS in the zone", q(func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }), dns.RcodeRefused},
		{"class ANY", q(func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassANY }), dns.RcodeSuccess},
		{"AXFR", q(func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeAXFR }), dns.RcodeRefused},
		{"outside the zone, no upstream", q(func(m *dns.Msg) { m.Question[0].Name = "example.com." }), dns.RcodeRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := serve(t, h, tt.req, true)
			if tt.rcode < 0 {
				if m != nil {
					t.Fatalf("answered %v", m)
				}
				return
			}
			if m == nil {
				t.Fatal("dropped")
			}
			if m.Rcode != tt.rcode || m.Id != tt.req.Id || !m.Response {
				t.Errorf("rcode %s id %d, want %s id %d", dns.RcodeToString[m.Rcode], m.Id, dns.RcodeToString[tt.rcode], tt.req.Id)
			}
		})
	}
}

// TestHandlerCountsFailedWrites: an answer the socket will not take is
// counted, on the fast path and the general one alike.
func TestHandlerCountsFailedWrites(t *testing.T) {
	tbl := testZone(t)
	metrics := NewMetrics(tbl.Records)
	h := NewHandler(tbl, nil, metrics)
	w := &recorder{udp: true, fail: syscall.EMSGSIZE}
	r := new(dns.Msg)
	r.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
	raw, _ := r.Pack()
	if h.servePacket(context.Background(), w, raw, newUDPScratch()) {
		t.Fatal("servePacket would forward a name in the zone")
	}
	if _, err := h.ServeDNS(context.Background(), w, r); !errors.Is(err, syscall.EMSGSIZE) {
		t.Errorf("ServeDNS: %v, want the write's error", err)
	}
	rec := httptest.NewRecorder()
	metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := "berth_dns_write_failures_total 2"; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %q:\n%s", want, grep(rec.Body.String(), "berth_dns"))
	}
}

func TestHandlerOverloaded(t *testing.T) {
	h := NewHandler(testZone(t), nil, nil)
	r := new(dns.Msg)
	r.SetQuestion("example.com.", dns.TypeA)
	r.SetEdns0(1232, false)
	raw, _ := r.Pack()
	w := &recorder{udp: true}
	h.overloaded(w, raw, make([]byte, 0, 512))
	if m := unpackOne(t, w.out); m.Rcode != dns.RcodeServerFailure || m.Id != r.Id || m.IsEdns0() == nil {
		t.Errorf("overloaded: %v", m)
	}
}

// TestHandlerSharesNothingMutable answers from many goroutines while the
// table changes under them; run with -race. Answers with EDNS0 and
// truncation are the ones that touch the sections.
func TestHandlerSharesNothingMutable(t *testing.T) {
	tbl := testZone(t)
	h := NewHandler(tbl, nil, NewMetrics(tbl.Records))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				m := new(dns.Msg)
				switch i % 3 {
				case 0:
					m.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
				case 1:
					m.SetQuestion("_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV)
				case 2:
					m.SetQuestion("gone.default.svc.cluster.local.", dns.TypeA)
				}
				if g%2 == 0 {
					m.SetEdns0(512, true)
				}
				if serve(t, h, m, g < 2) == nil {
					t.Error("dropped")
					return
				}
			}
		})
	}
	for i := range 200 {
		n := 1 + i%40
		ep := manyEndpoints("default", "web", n, i)
		tbl.apply([]change{{key: "web.default", entry: buildEntry(tbl.zone, svc("default", "web"), ep)}})
	}
	stop.Store(true)
	wg.Wait()
}

// FuzzHandler feeds arbitrary packets to both ways the server takes a
// request: servePacket, as the UDP readers hand it a datagram, and, when it
// unpacks, ServeDNS, as miekg/dns's TCP server hands it a message. Neither
// may panic; each answers once or drops; answers unpack, carry the
// request's ID and fit the UDP size; and the two ways answer alike.
func FuzzHandler(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed, true)
	}
	tbl := testZone(f)
	h := NewHandler(tbl, nil, NewMetrics(tbl.Records))
	sc := newUDPScratch()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, packet []byte, udp bool) {
		raw := &recorder{udp: true}
		forward := h.servePacket(ctx, raw, packet, sc)
		if len(raw.out) > 1 || forward && len(raw.out) > 0 {
			t.Fatalf("servePacket: %d answers, forward %v", len(raw.out), forward)
		}

		r := new(dns.Msg)
		if err := r.Unpack(packet); err != nil {
			if len(raw.out) == 1 && !isFormErr(raw.out[0]) {
				if _, ok := parseQuery(packet, sc.name[:]); !ok {
					t.Fatalf("a packet that does not unpack got %x", raw.out[0])
				}
			}
			return
		}
		msg := &recorder{udp: true}
		if _, err := h.ServeDNS(ctx, msg, r); err != nil && len(msg.out) != 0 {
			t.Fatalf("error %v after writing", err)
		}
		tcp := &recorder{}
		_, _ = h.ServeDNS(ctx, tcp, r)
		if len(msg.out) == 0 {
			if !r.Response {
				t.Fatal("ServeDNS dropped a request")
			}
			return
		}
		m := checkAnswer(t, r, msg.out, true)
		checkAnswer(t, r, tcp.out, false)
		switch {
		case forward:
			t.Fatal("servePacket forwards without an upstream")
		case len(raw.out) == 1:
			if a, b := canonical(checkAnswer(t, r, raw.out, true)), canonical(m); a != b {
				t.Fatalf("the two paths differ:\npacket:\n%s\nmessage:\n%s", a, b)
			}
		default:
			t.Fatal("servePacket dropped what ServeDNS answers")
		}
	})
}

func isFormErr(b []byte) bool {
	return len(b) == 12 && b[3]&0xF == dns.RcodeFormatError
}

// checkAnswer unpacks the one answer to r and checks its ID and size.
func checkAnswer(t *testing.T, r *dns.Msg, out [][]byte, udp bool) *dns.Msg {
	t.Helper()
	if len(out) != 1 {
		t.Fatalf("%d answers", len(out))
	}
	m := new(dns.Msg)
	if err := m.Unpack(out[0]); err != nil {
		t.Fatalf("answer does not unpack: %v", err)
	}
	if m.Id != r.Id || !m.Response {
		t.Fatalf("answer id %d response %v, request id %d", m.Id, m.Response, r.Id)
	}
	size := udpSize(false, 0, false)
	if opt := r.IsEdns0(); opt != nil {
		size = udpSize(true, opt.UDPSize(), false)
	}
	if udp && len(out[0]) > size {
		t.Fatalf("UDP answer of %d bytes for a size of %d", len(out[0]), size)
	}
	return m
}

// fuzzSeeds are packets worth starting from; testdata/fuzz/FuzzHandler
// holds them too, with a few broken ones.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	add := func(name string, qtype uint16, mod func(*dns.Msg)) {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		if mod != nil {
			mod(m)
		}
		b, err := m.Pack()
		if err != nil {
			panic(fmt.Sprintf("seed %s: %v", name, err))
		}
		seeds = append(seeds, b)
	}
	edns := func(m *dns.Msg) { m.SetEdns0(1232, true) }
	add("web.default.svc.cluster.local.", dns.TypeA, nil)
	add("WEB.default.svc.cluster.local.", dns.TypeA, edns)
	add("_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV, edns)
	add("web-a.web.default.svc.cluster.local.", dns.TypeAAAA, nil)
	add("web.default.svc.cluster.local.", dns.TypeSRV, edns)
	add("ext.default.svc.cluster.local.", dns.TypeANY, nil)
	add("ext.default.svc.cluster.local.", dns.TypeCNAME, edns)
	add("alias2.default.svc.cluster.local.", dns.TypeA, edns)
	add("hop.default.svc.cluster.local.", dns.TypeAAAA, nil)
	add("loop-a.default.svc.cluster.local.", dns.TypeA, nil)
	add("dangling.default.svc.cluster.local.", dns.TypeSRV, edns)
	add("dns-version.cluster.local.", dns.TypeTXT, nil)
	add("cluster.local.", dns.TypeSOA, nil)
	add("nothing.svc.cluster.local.", dns.TypeA, edns)
	add("quiet.svc.cluster.local.", dns.TypeA, nil)
	add("10-0-0-9.default.pod.cluster.local.", dns.TypeA, nil)
	add("1.0.0.10.in-addr.arpa.", dns.TypePTR, edns)
	add("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", dns.TypePTR, nil)
	add("fd00--1.other.pod.cluster.local.", dns.TypeAAAA, edns)
	add("example.com.", dns.TypeA, nil)
	add("_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV, func(m *dns.Msg) { m.SetEdns0(65535, false) })
	add("web.default.svc.cluster.local.", dns.TypeA, func(m *dns.Msg) { m.Opcode = dns.OpcodeUpdate })
	add("web.default.svc.cluster.local.", dns.TypeA, func(m *dns.Msg) {
		m.SetEdns0(4096, false)
		m.IsEdns0().SetVersion(3)
	})
	return seeds
}

// TestFastPathMatchesGeneralPath answers the same questions through the
// packed fast path and through miekg/dns's packing, and compares the
// answers record by record (names without regard to case: the fast path
// answers in the asker's case).
func TestFastPathMatchesGeneralPath(t *testing.T) {
	tbl := testZone(t)
	fill(t, tbl, svc("default", "big"), manyEndpoints("default", "big", 60, 1))
	fast := NewHandler(tbl, nil, nil)
	general := NewHandler(tbl, nil, nil)
	general.general = true
	names := []string{
		"web.default.svc.cluster.local.", "WEB.Default.svc.cluster.LOCAL.", "_http._tcp.web.default.svc.cluster.local.",
		"_HTTP._Tcp.web.default.svc.cluster.local.", "web-a.web.default.svc.cluster.local.", "ext.default.svc.cluster.local.",
		"Ext.Default.svc.cluster.local.", "dns-version.cluster.local.", "cluster.local.", "CLUSTER.LOCAL.",
		"nothing.default.svc.cluster.local.", "a.b.c.d.e.f.cluster.local.", "Default.svc.cluster.local.",
		"v6.other.svc.cluster.local.", "big.default.svc.cluster.local.", "_http._tcp.big.default.svc.cluster.local.",
		"_tcp.web.default.svc.cluster.local.", "alias.default.svc.cluster.local.", "Alias2.default.svc.cluster.local.",
		"hop.default.svc.cluster.local.", "loop-a.default.svc.cluster.local.", "dangling.default.svc.cluster.local.",
		"quiet.svc.cluster.local.", "Quiet.svc.cluster.local.", "10-0-0-9.default.pod.cluster.local.",
		"FD00--1.other.pod.cluster.local.", "default.pod.cluster.local.", "10-0-0-9.nowhere.pod.cluster.local.",
		"1.0.0.10.In-Addr.Arpa.", "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.",
	}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypeTXT, dns.TypeSOA, dns.TypeCNAME, dns.TypeMX, dns.TypePTR}
	fastAnswers := 0
	for _, name := range names {
		for _, qtype := range types {
			for _, size := range []uint16{0, 512, 1232, 4096} {
				for _, udp := range []bool{true, false} {
					r := new(dns.Msg)
					r.SetQuestion(name, qtype)
					r.CheckingDisabled = qtype == dns.TypeMX
					if size > 0 {
						r.SetEdns0(size, size == 1232)
					}
					var a, b [][]byte
					for i, h := range []*Handler{fast, general} {
						w := &recorder{udp: udp}
						if _, err := h.ServeDNS(context.Background(), w, r); err != nil {
							t.Fatal(err)
						}
						if i == 0 {
							a = w.out
						} else {
							b = w.out
						}
					}
					ma, mb := unpackOne(t, a), unpackOne(t, b)
					if sa, sb := canonical(ma), canonical(mb); sa != sb {
						t.Errorf("%s %s size %d udp %v:\nfast:\n%s\ngeneral:\n%s", name, dns.TypeToString[qtype], size, udp, sa, sb)
					}
					limit := dns.MaxMsgSize
					if udp {
						limit = udpSize(size > 0, size, false)
					}
					ans := tbl.Lookup(name, qtype)
					fq, ok := queryOf(r)
					if !ok {
						t.Fatalf("%v is not a plain query", r)
					}
					if _, ok := fast.fast(make([]byte, 0, dns.MaxMsgSize), &fq, &ans, limit); ok {
						fastAnswers++
					}
				}
			}
		}
	}
	t.Logf("the fast path answered %d of the questions", fastAnswers)
	if fastAnswers < 500 {
		t.Error("the fast path hardly answered")
	}
}

func unpackOne(t *testing.T, out [][]byte) *dns.Msg {
	t.Helper()
	if len(out) != 1 {
		t.Fatalf("%d answers", len(out))
	}
	m := new(dns.Msg)
	if err := m.Unpack(out[0]); err != nil {
		t.Fatal(err)
	}
	return m
}

// canonical prints a message with every name in lower case.
func canonical(m *dns.Msg) string {
	m.Id = 0
	return strings.ToLower(m.String())
}

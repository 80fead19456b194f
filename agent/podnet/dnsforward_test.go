package podnet

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/berth-dev/berth/testtool"
)

// upstream is a DNS server on loopback standing in for the cluster DNS: a
// name answers as many A records as its first label says
// ("20.example."), over UDP truncated past 512 bytes as a server does.
func upstream(t testing.TB) string {
	t.Helper()
	pc, l := testtool.LoopbackPair(t)
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		if len(r.Question) == 1 {
			var n int
			fmt.Sscanf(r.Question[0].Name, "%d.", &n)
			for i := range min(n, 200) {
				m.Answer = append(m.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: r.Question[0].Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 5},
					A: net.IPv4(198, 18, byte(i/250), byte(i%250+1))})
			}
		}
		if w.LocalAddr().Network() == "udp" {
			m.Truncate(mdns.MinMsgSize)
		}
		_ = w.WriteMsg(m)
	})
	for _, s := range []*mdns.Server{{PacketConn: pc, Handler: h}, {Listener: l, Handler: h}} {
		go func() { _ = s.ActivateAndServe() }()
		t.Cleanup(func() { _ = s.Shutdown() })
	}
	return pc.LocalAddr().String()
}

// forwarder starts a forwarder on loopback sockets, asking up.
func forwarder(t testing.TB, up string) string {
	t.Helper()
	f := NewDNSForwarder(up, slog.New(slog.DiscardHandler))
	// Start's port 0 would pick a different port for each socket: serve
	// on a pair of the same port instead.
	pc, l := testtool.LoopbackPair(t)
	f.StartOn(pc, l)
	t.Cleanup(f.Stop)
	return pc.LocalAddr().String()
}

func TestDNSForwarder(t *testing.T) {
	addr := forwarder(t, upstream(t))
	ask := func(network, name string, edns uint16) *mdns.Msg {
		t.Helper()
		q := new(mdns.Msg)
		q.SetQuestion(name, mdns.TypeA)
		if edns > 0 {
			q.SetEdns0(edns, false)
		}
		r, _, err := (&mdns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(q, addr)
		if err != nil && r == nil {
			t.Fatalf("%s %s: %v", network, name, err)
		}
		return r
	}
	for _, tc := range []struct {
		network   string
		name      string
		edns      uint16
		answers   int
		truncated bool
	}{
		{"udp", "3.example.", 0, 3, false},
		// 100 A records do not fit 512 bytes: the forwarder asks again
		// over TCP, and gives a UDP client what its buffer holds.
		{"udp", "100.example.", 0, 0, true},
		{"udp", "100.example.", 4096, 100, false},
		{"tcp", "100.example.", 0, 100, false},
	} {
		r := ask(tc.network, tc.name, tc.edns)
		if r.Rcode != mdns.RcodeSuccess || len(r.Answer) < tc.answers || (!tc.truncated && len(r.Answer) != tc.answers) || r.Truncated != tc.truncated {
			t.Errorf("%s %s (EDNS0 %d): rcode %d, %d answers, truncated %v; want %d answers, truncated %v",
				tc.network, tc.name, tc.edns, r.Rcode, len(r.Answer), r.Truncated, tc.answers, tc.truncated)
		}
	}

	// An upstream that is down: SERVFAIL, not silence.
	down := forwarder(t, closedPort(t))
	q := new(mdns.Msg)
	q.SetQuestion("1.example.", mdns.TypeA)
	r, _, err := (&mdns.Client{Net: "udp", Timeout: 10 * time.Second}).Exchange(q, down)
	if err != nil || r.Rcode != mdns.RcodeServerFailure || r.Id != q.Id {
		t.Fatalf("upstream down: %v, %v; want SERVFAIL", r, err)
	}
}

// closedPort is a loopback address where nothing listens, over UDP or TCP.
func closedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// FuzzDNSForwarder sends whatever bytes to the forwarder over UDP: a
// message miekg/dns cannot read is dropped, any other is answered, and the
// forwarder never panics or stops serving.
func FuzzDNSForwarder(f *testing.F) {
	for _, name := range []string{"3.example.", "100.example.", "."} {
		q := new(mdns.Msg)
		q.SetQuestion(name, mdns.TypeA)
		b, _ := q.Pack()
		f.Add(b)
		q.SetEdns0(4096, true)
		b, _ = q.Pack()
		f.Add(b)
	}
	f.Add([]byte{0, 1, 2})
	addr := forwarder(f, upstream(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(b); err != nil {
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		buf := make([]byte, 65535)
		_, _ = c.Read(buf)
		// Still serving.
		q := new(mdns.Msg)
		q.SetQuestion("1.example.", mdns.TypeA)
		if r, _, err := (&mdns.Client{Net: "udp", Timeout: 5 * time.Second}).Exchange(q, addr); err != nil || len(r.Answer) != 1 {
			t.Fatalf("after %x: %v, %v", b, r, err)
		}
	})
}

// TestDNSForwarderStopsAtOnce stops a forwarder right after it starts,
// which must not wait for a server that had not begun to serve.
func TestDNSForwarderStopsAtOnce(t *testing.T) {
	for range 20 {
		f := NewDNSForwarder(closedPort(t), slog.New(slog.DiscardHandler))
		if err := f.Start(netip.MustParseAddrPort("127.0.0.1:0")); err != nil {
			t.Fatal(err)
		}
		f.Stop()
	}
}

package dns

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// bigUpstream is an upstream whose answers are as large as a datagram of
// 4,096 bytes holds (to a question with EDNS0): TXT records of 250 bytes each, as a reflection flood
// would pick. It counts the questions it gets.
func bigUpstream(t *testing.T, asked *atomic.Int64) string {
	return stubUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		asked.Add(1)
		m := new(dns.Msg)
		m.SetReply(r)
		n := 1 // as much as 512 bytes hold
		if r.IsEdns0() != nil {
			n = 15
		}
		for range n {
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60},
				Txt: []string{strings.Repeat("x", 250)}})
		}
		if o := r.IsEdns0(); o != nil {
			m.SetEdns0(4096, false)
		}
		_ = w.WriteMsg(m)
	})
}

// outsiders makes loopback, where the tests' questions come from, a client
// outside the recursion networks.
var outsiders = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}

// TestServerRefusesRecursionToOthers: a client outside the recursion
// networks is REFUSED every name outside the zone, over UDP and TCP, and
// the upstream never hears of it; names in the zone are answered, an
// ExternalName with its CNAME alone. Loopback, in the default networks,
// is forwarded for.
func TestServerRefusesRecursionToOthers(t *testing.T) {
	var asked atomic.Int64
	upstream := bigUpstream(t, &asked)
	st := newStore(t, store.Options{})
	put(t, st, append(clusterObjects(), svc("default", "out", externalName("example.org")))...)
	srv := startServer(t, st, Options{Upstream: upstream, RecursionNetworks: outsiders}, nil)
	for _, network := range []string{"udp", "tcp"} {
		for _, size := range []uint16{0, 4096} {
			m := ask(t, network, srv.Addr(), "example.org.", dns.TypeTXT, size)
			if m.Rcode != dns.RcodeRefused || len(m.Answer) != 0 {
				t.Errorf("%s size %d: %s with %d answers, want REFUSED", network, size, dns.RcodeToString[m.Rcode], len(m.Answer))
			}
		}
		if m := ask(t, network, srv.Addr(), "web.default.svc.cluster.local.", dns.TypeA, 0); m.Rcode != dns.RcodeSuccess || len(m.Answer) != 2 {
			t.Errorf("%s: a name in the zone: %v", network, m)
		}
		m := ask(t, network, srv.Addr(), "out.default.svc.cluster.local.", dns.TypeTXT, 1232)
		if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 || m.Answer[0].Header().Rrtype != dns.TypeCNAME {
			t.Errorf("%s: an ExternalName: %v, want its CNAME alone", network, m)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the upstream was asked %d questions for a client outside the networks", n)
	}

	open := startServer(t, st, Options{Upstream: upstream}, nil)
	if m := ask(t, "udp", open.Addr(), "example.org.", dns.TypeTXT, 0); m.Rcode != dns.RcodeSuccess || asked.Load() == 0 {
		t.Errorf("loopback under the default networks: %s, upstream asked %d times", dns.RcodeToString[m.Rcode], asked.Load())
	}
}

// TestServerAmplification measures the largest UDP answer a query of the
// same size gets, for names in the zone (a headless service of 5,000
// endpoints, A, SRV, ANY) and outside it: a client in the recursion
// networks that shows a server cookie, and one outside them that shows
// none, as a forged source would. The second is what a reflection flood
// gets: no answer over cookielessUDPSize.
func TestServerAmplification(t *testing.T) {
	var asked atomic.Int64
	upstream := bigUpstream(t, &asked)
	st := newStore(t, store.Options{})
	put(t, st, svc("default", "huge"), manyEndpoints("default", "huge", 5000, 1))
	questions := []struct {
		name  string
		qtype uint16
	}{
		{"huge.default.svc.cluster.local.", dns.TypeA},
		{"_http._tcp.huge.default.svc.cluster.local.", dns.TypeSRV},
		{"huge.default.svc.cluster.local.", dns.TypeANY},
		{"example.org.", dns.TypeTXT},
	}
	measure := func(addr string, cookie string) (worst float64, largest int) {
		for _, q := range questions {
			m := new(dns.Msg)
			m.SetQuestion(q.name, q.qtype)
			m.SetEdns0(4096, false)
			if cookie != "" {
				o := m.IsEdns0()
				o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: cookie})
			}
			query, err := m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			c := &dns.Client{Net: "udp", Timeout: 5 * time.Second, UDPSize: 65535}
			resp, _, err := c.Exchange(m, addr)
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			n := packedLen(resp)
			largest = max(largest, n)
			worst = max(worst, float64(n)/float64(len(query)))
		}
		return worst, largest
	}
	trusted := startServer(t, st, Options{Upstream: upstream}, nil)
	ratio, largest := measure(trusted.Addr(), serverCookie(t, trusted.Addr()))
	t.Logf("a client of the recursion networks with a server cookie: largest UDP answer %d bytes, %.1f times its query", largest, ratio)
	if largest <= cookielessUDPSize {
		t.Errorf("a trusted client with a cookie got no answer over %d bytes: the measure measures nothing", cookielessUDPSize)
	}
	outside := startServer(t, st, Options{Upstream: upstream, RecursionNetworks: outsiders}, nil)
	ratio, largest = measure(outside.Addr(), "")
	t.Logf("a client outside them without a cookie: largest UDP answer %d bytes, %.1f times its query", largest, ratio)
	if largest > cookielessUDPSize {
		t.Errorf("an answer of %d bytes to a client without a cookie, want at most %d", largest, cookielessUDPSize)
	}
}

// TestServerForwardsForNodes: a Node's address is forwarded for, beside
// the recursion networks, for as long as the Node lists it: the agents'
// node-local DNS asks from there for their pods.
func TestServerForwardsForNodes(t *testing.T) {
	var asked atomic.Int64
	upstream := bigUpstream(t, &asked)
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{Upstream: upstream, RecursionNetworks: outsiders}, nil)
	if m := ask(t, "udp", srv.Addr(), "example.org.", dns.TypeTXT, 0); m.Rcode != dns.RcodeRefused {
		t.Fatalf("before the node: %s, want REFUSED", dns.RcodeToString[m.Rcode])
	}
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: api.NodeStatus{Addresses: []api.NodeAddress{
		{Type: api.NodeInternalIP, Address: "127.0.0.1"}, {Type: api.NodeHostName, Address: "n1"}}}}
	put(t, st, node)
	waitFor(t, 5*time.Second, "the node's address to be forwarded for", func() bool {
		return ask(t, "udp", srv.Addr(), "example.org.", dns.TypeTXT, 0).Rcode == dns.RcodeSuccess
	})
	if _, err := st.Txn(context.Background(), func(tx *store.Txn) error {
		_, err := tx.Delete(nodeKind, "", "n1", store.DeleteOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the node's address to be refused again", func() bool {
		return ask(t, "udp", srv.Addr(), "example.org.", dns.TypeTXT, 0).Rcode == dns.RcodeRefused
	})
}

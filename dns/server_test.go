package dns

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// clusterObjects is a small cluster: a service with three ready pods (two
// on one node IP) and one not ready, an ExternalName service, and a
// service whose pods are all not ready.
func clusterObjects() []api.Object {
	http := api.EndpointPort{Name: "http", Port: 8080, Protocol: api.ProtocolTCP}
	return []api.Object{
		svc("default", "web"),
		eps("default", "web", subset(
			ready(at("web-a", "10.0.0.1"), at("web-b", "10.0.0.1"), at("web-c", "10.0.0.2")),
			notReady(at("web-d", "10.0.0.3")), ports(http))),
		svc("default", "ext", externalName("example.com")),
		svc("default", "down"),
		eps("default", "down", subset(notReady(at("down-a", "10.0.9.1")), ports(http))),
	}
}

func answers(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		case *dns.SRV:
			out = append(out, fmt.Sprintf("%d %s", rr.Port, rr.Target))
		case *dns.CNAME:
			out = append(out, "CNAME "+rr.Target)
		case *dns.TXT:
			out = append(out, "TXT "+strings.Join(rr.Txt, " "))
		case *dns.SOA:
			out = append(out, "SOA "+rr.Hdr.Name)
		default:
			out = append(out, rr.String())
		}
	}
	return out
}

// askWant asks one question without EDNS0 and checks the answer's rcode
// and its answer section, as answers prints it.
func askWant(t *testing.T, network, addr, name string, qtype uint16, rcode int, want []string) *dns.Msg {
	t.Helper()
	m := ask(t, network, addr, name, qtype, 0)
	if m.Rcode != rcode {
		t.Fatalf("rcode %s, want %s", dns.RcodeToString[m.Rcode], dns.RcodeToString[rcode])
	}
	if got := answers(m); !slices.Equal(got, want) {
		t.Errorf("answer %q, want %q", got, want)
	}
	return m
}

func hasSOA(m *dns.Msg) bool {
	return len(m.Ns) == 1 && m.Ns[0].Header().Rrtype == dns.TypeSOA && m.Ns[0].Header().Name == "cluster.local."
}

// TestServerAnswersEverySPECRow asks every row of SPEC §6 over UDP and TCP.
func TestServerAnswersEverySPECRow(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{}, nil)
	const web = "web.default.svc.cluster.local."
	tests := []struct {
		name    string
		qtype   uint16
		rcode   int
		want    []string
		extra   []string
		soaAuth bool
	}{
		{web, dns.TypeA, dns.RcodeSuccess, []string{"10.0.0.1", "10.0.0.2"}, nil, false},
		{"Web.DEFAULT.svc.Cluster.Local.", dns.TypeA, dns.RcodeSuccess, []string{"10.0.0.1", "10.0.0.2"}, nil, false},
		{"_http._tcp." + web, dns.TypeSRV, dns.RcodeSuccess,
			[]string{"8080 web-a." + web, "8080 web-b." + web, "8080 web-c." + web},
			[]string{"web-a." + web + " 10.0.0.1", "web-b." + web + " 10.0.0.1", "web-c." + web + " 10.0.0.2"}, false},
		{web, dns.TypeSRV, dns.RcodeSuccess,
			[]string{"8080 web-a." + web, "8080 web-b." + web, "8080 web-c." + web},
			[]string{"web-a." + web + " 10.0.0.1", "web-b." + web + " 10.0.0.1", "web-c." + web + " 10.0.0.2"}, false},
		{"web-c." + web, dns.TypeA, dns.RcodeSuccess, []string{"10.0.0.2"}, nil, false},
		{"ext.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"CNAME example.com."}, nil, false},
		{"dns-version.cluster.local.", dns.TypeTXT, dns.RcodeSuccess, []string{"TXT 1.1.0"}, nil, false},
		{"down.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil, nil, true},
		{"nothing.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil, nil, true},
		{web, dns.TypeAAAA, dns.RcodeSuccess, nil, nil, true},
		{"example.org.", dns.TypeA, dns.RcodeRefused, nil, nil, false}, // upstream none
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tt := range tests {
			t.Run(network+"/"+tt.name+"/"+dns.TypeToString[tt.qtype], func(t *testing.T) {
				m := askWant(t, network, srv.Addr(), tt.name, tt.qtype, tt.rcode, tt.want)
				var extra []string
				for _, rr := range m.Extra {
					if a, ok := rr.(*dns.A); ok {
						extra = append(extra, a.Hdr.Name+" "+a.A.String())
					}
				}
				if !slices.Equal(extra, tt.extra) {
					t.Errorf("additional %q, want %q", extra, tt.extra)
				}
				if hasSOA(m) != tt.soaAuth {
					t.Errorf("authority %v; want the SOA: %v", m.Ns, tt.soaAuth)
				}
				if m.Question[0].Name != tt.name {
					t.Errorf("question echoed as %q", m.Question[0].Name)
				}
				if tt.rcode != dns.RcodeRefused && !m.Authoritative {
					t.Error("answer from the zone is not authoritative")
				}
			})
		}
	}
}

func TestServerEDNS(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{}, nil)

	m := ask(t, "udp", srv.Addr(), "web.default.svc.cluster.local.", dns.TypeA, 0)
	if m.IsEdns0() != nil {
		t.Error("an answer to a question without EDNS0 has an OPT record")
	}
	m = ask(t, "udp", srv.Addr(), "web.default.svc.cluster.local.", dns.TypeA, 1232)
	opt := m.IsEdns0()
	if opt == nil || opt.Version() != 0 || opt.Do() {
		t.Fatalf("OPT = %v, want version 0 without DO", opt)
	}
	if len(m.Answer) != 2 {
		t.Errorf("answer %v", m.Answer)
	}

	// The DO bit is echoed; the SOA of a negative answer too.
	q := new(dns.Msg)
	q.SetQuestion("missing.default.svc.cluster.local.", dns.TypeA)
	q.SetEdns0(4096, true)
	m, _, err := (&dns.Client{Net: "udp"}).Exchange(q, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if opt := m.IsEdns0(); opt == nil || !opt.Do() || m.Rcode != dns.RcodeNameError || !hasSOA(m) {
		t.Errorf("negative answer with DO: %v", m)
	}

	// An EDNS version we do not speak: BADVERS.
	q = new(dns.Msg)
	q.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
	q.SetEdns0(4096, false)
	q.IsEdns0().SetVersion(1)
	m, _, err = (&dns.Client{Net: "udp"}).Exchange(q, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if m.Rcode != dns.RcodeBadVers || m.IsEdns0() == nil || len(m.Answer) != 0 {
		t.Errorf("EDNS version 1: rcode %d, %v", m.Rcode, m)
	}
	// Counted under its name: 16 is BADSIG only in a TSIG record.
	testtool.WaitFor(t, 5*time.Second, "the BADVERS count", func() error {
		metrics := get(t, "http://"+srv.MetricsAddr()+"/metrics")
		if want := `berth_dns_requests_total{rcode="BADVERS",type="A"} 1`; !strings.Contains(metrics, want) {
			return fmt.Errorf("metrics lack %q:\n%s", want, grep(metrics, "requests_total"))
		}
		return nil
	})
}

// TestServerTruncation: 200 endpoints do not fit 512 bytes of UDP; the
// answer is truncated with TC, complete over TCP and with a large EDNS0
// buffer.
func TestServerTruncation(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, svc("default", "big"), manyEndpoints("default", "big", 200, 1))
	srv := startServer(t, st, Options{}, nil)
	const name = "big.default.svc.cluster.local."

	m := ask(t, "udp", srv.Addr(), name, dns.TypeA, 0)
	if !m.Truncated || len(m.Answer) >= 200 {
		t.Errorf("UDP without EDNS0: TC=%v with %d answers, want TC and fewer than 200", m.Truncated, len(m.Answer))
	}
	m.Compress = true
	if b, _ := m.Pack(); len(b) > 512 {
		t.Errorf("UDP answer of %d bytes, more than 512", len(b))
	}
	m = ask(t, "tcp", srv.Addr(), name, dns.TypeA, 0)
	if m.Truncated || len(m.Answer) != 200 {
		t.Errorf("TCP: TC=%v with %d answers, want all 200", m.Truncated, len(m.Answer))
	}
	// A buffer of 4096 bytes holds them, but a client that shows no server
	// cookie gets at most 1232; one that does gets all.
	m = ask(t, "udp", srv.Addr(), name, dns.TypeA, 4096)
	if !m.Truncated || m.IsEdns0() == nil {
		t.Errorf("UDP with EDNS0 4096, no cookie: TC=%v with %d answers, want TC", m.Truncated, len(m.Answer))
	}
	m = askWithCookie(t, "udp", srv.Addr(), name, dns.TypeA, 4096, serverCookie(t, srv.Addr()))
	if m.Truncated || len(m.Answer) != 200 || m.IsEdns0() == nil {
		t.Errorf("UDP with EDNS0 4096 and a cookie: TC=%v with %d answers, want all 200", m.Truncated, len(m.Answer))
	}
	// SRV with its additional section is larger still: 1232 bytes truncate.
	m = ask(t, "udp", srv.Addr(), "_http._tcp."+name, dns.TypeSRV, 1232)
	if !m.Truncated {
		t.Errorf("SRV of 200 over UDP 1232: not truncated (%d answers)", len(m.Answer))
	}
	m = ask(t, "tcp", srv.Addr(), "_http._tcp."+name, dns.TypeSRV, 0)
	if m.Truncated || len(m.Answer) != 200 || len(m.Extra) != 200 {
		t.Errorf("SRV over TCP: TC=%v, %d answers, %d additional", m.Truncated, len(m.Answer), len(m.Extra))
	}

	// The client of the package retries over TCP on TC.
	c := &dns.Client{Net: "udp"}
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	m, _, err := c.Exchange(q, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if m.Truncated {
		m, _, err = (&dns.Client{Net: "tcp"}).Exchange(q, srv.Addr())
		if err != nil || len(m.Answer) != 200 {
			t.Errorf("retry over TCP: %d answers, %v", len(m.Answer), err)
		}
	}
}

// TestServerCapsUDPSize: a client may advertise an EDNS0 buffer of
// 65,535 bytes, more than a datagram holds (65,507 over IPv4). A headless
// service of 5,000 endpoints answers more than that; the answer must still
// come, truncated to the 4,096 bytes the server advertises (1,232 to a
// client without a server cookie), and TCP carries more.
func TestServerCapsUDPSize(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, svc("default", "huge"), manyEndpoints("default", "huge", 5000, 1))
	srv := startServer(t, st, Options{}, nil)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"huge.default.svc.cluster.local.", dns.TypeA},
		{"_http._tcp.huge.default.svc.cluster.local.", dns.TypeSRV},
	} {
		if m := ask(t, "udp", srv.Addr(), q.name, q.qtype, 65535); !m.Truncated || packedLen(m) > cookielessUDPSize {
			t.Errorf("%s over UDP with a 65535 buffer and no cookie: TC=%v, %d bytes", q.name, m.Truncated, packedLen(m))
		}
		m := askWithCookie(t, "udp", srv.Addr(), q.name, q.qtype, 65535, serverCookie(t, srv.Addr()))
		opt := m.IsEdns0()
		if !m.Truncated || opt == nil || opt.UDPSize() != advertisedUDPSize {
			t.Errorf("%s over UDP with a 65535 buffer: TC=%v, OPT %v", q.name, m.Truncated, opt)
		}
		m.Compress = true
		if b, _ := m.Pack(); len(b) > advertisedUDPSize {
			t.Errorf("%s: an answer of %d bytes over UDP", q.name, len(b))
		}
		// Not all 5,000 fit even the 65,535 bytes of a TCP message.
		if tcp := ask(t, "tcp", srv.Addr(), q.name, q.qtype, 65535); len(tcp.Answer) <= len(m.Answer) {
			t.Errorf("%s: %d answers over TCP, %d over UDP", q.name, len(tcp.Answer), len(m.Answer))
		}
	}
}

func TestServerForwards(t *testing.T) {
	upstream := stubUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		switch q.Name {
		case "example.com.":
			rr, _ := dns.NewRR("example.com. 60 IN A 192.0.2.1")
			m.Answer = append(m.Answer, rr)
		case "big.example.com.":
			// Too large for UDP: truncated there, whole over TCP.
			for i := range 100 {
				rr, _ := dns.NewRR(fmt.Sprintf("big.example.com. 60 IN A 192.0.2.%d", i+1))
				m.Answer = append(m.Answer, rr)
			}
			if _, ok := w.LocalAddr().(*net.UDPAddr); ok {
				m.Truncate(512)
			}
		default:
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{Upstream: upstream}, nil)

	m := ask(t, "udp", srv.Addr(), "example.com.", dns.TypeA, 0)
	if m.Rcode != dns.RcodeSuccess || !slices.Equal(answers(m), []string{"192.0.2.1"}) {
		t.Errorf("forwarded: %v", m)
	}
	m = ask(t, "udp", srv.Addr(), "nope.example.com.", dns.TypeA, 0)
	if m.Rcode != dns.RcodeNameError {
		t.Errorf("forwarded NXDOMAIN: %v", m)
	}
	// The upstream truncates over UDP: the forwarder asks again over TCP,
	// and hands the whole answer to a TCP client.
	m = ask(t, "tcp", srv.Addr(), "big.example.com.", dns.TypeA, 0)
	if m.Truncated || len(m.Answer) != 100 {
		t.Errorf("big over TCP: TC=%v, %d answers", m.Truncated, len(m.Answer))
	}
	m = ask(t, "udp", srv.Addr(), "big.example.com.", dns.TypeA, 0)
	if !m.Truncated {
		t.Errorf("big over UDP 512: not truncated")
	}
	// Names in the zone are not forwarded.
	if m := ask(t, "udp", srv.Addr(), "web.default.svc.cluster.local.", dns.TypeA, 0); len(m.Answer) != 2 {
		t.Errorf("zone name: %v", m)
	}
	metrics := get(t, "http://"+srv.MetricsAddr()+"/metrics")
	if !strings.Contains(metrics, "berth_dns_forwarded_requests_total 4") {
		t.Errorf("forwarded counter:\n%s", grep(metrics, "forwarded"))
	}
}

func TestServerUpstreamTimeout(t *testing.T) {
	// An upstream that reads and never answers.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{Upstream: pc.LocalAddr().String(), ForwardTimeout: time.Second}, nil)

	// Questions waiting on the upstream hold no reader: more of them than
	// there are readers, and a name in the zone is still answered at once.
	results := make(chan *dns.Msg, 8)
	for i := range cap(results) {
		go func() {
			m := new(dns.Msg)
			m.SetQuestion(fmt.Sprintf("q%d.example.com.", i), dns.TypeA)
			r, _, err := (&dns.Client{Net: "udp", Timeout: 5 * time.Second}).Exchange(m, srv.Addr())
			if err != nil {
				t.Error(err)
			}
			results <- r
		}()
	}
	start := time.Now()
	if m := ask(t, "udp", srv.Addr(), "web.default.svc.cluster.local.", dns.TypeA, 0); len(m.Answer) != 2 {
		t.Errorf("zone name while forwards wait: %v", m)
	}
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("a zone name took %v while forwards waited", d)
	}
	for range cap(results) {
		if m := <-results; m == nil || m.Rcode != dns.RcodeServerFailure {
			t.Errorf("upstream silent: %v, want SERVFAIL", m)
		}
	}
}

func TestServerUpstreamNone(t *testing.T) {
	st := newStore(t, store.Options{})
	srv := startServer(t, st, Options{Upstream: UpstreamNone}, nil)
	for _, network := range []string{"udp", "tcp"} {
		m := ask(t, network, srv.Addr(), "example.com.", dns.TypeA, 0)
		if m.Rcode != dns.RcodeRefused || m.RecursionAvailable {
			t.Errorf("%s: rcode %s RA=%v, want REFUSED without RA", network, dns.RcodeToString[m.Rcode], m.RecursionAvailable)
		}
	}
}

// TestServerBeforeSync holds the follower back: SERVFAIL and an unhealthy
// /healthz until the store has been read, then answers.
func TestServerBeforeSync(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	release := make(chan struct{})
	srv := startServer(t, st, Options{}, func(ctx context.Context) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	for _, name := range []string{"web.default.svc.cluster.local.", "example.com."} {
		if m := ask(t, "udp", srv.Addr(), name, dns.TypeA, 0); m.Rcode != dns.RcodeServerFailure {
			t.Errorf("%s before sync: %s, want SERVFAIL", name, dns.RcodeToString[m.Rcode])
		}
	}
	if code := status(t, "http://"+srv.HealthAddr()+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz before sync: %d", code)
	}
	close(release)
	waitFor(t, 5*time.Second, "sync", srv.Ready)
	if m := ask(t, "udp", srv.Addr(), "web.default.svc.cluster.local.", dns.TypeA, 0); len(m.Answer) != 2 {
		t.Errorf("after sync: %v", m)
	}
	if code := status(t, "http://"+srv.HealthAddr()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after sync: %d", code)
	}
}

// TestServerFollowsStore changes Endpoints and Services and polls for the
// answers to follow, each within a second as SPEC §6 promises.
func TestServerFollowsStore(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{}, nil)
	addr := srv.Addr()
	const web = "web.default.svc.cluster.local."
	expect := func(what string, name string, want ...string) {
		t.Helper()
		start := time.Now()
		waitFor(t, time.Second, what, func() bool {
			return slices.Equal(answers(ask(t, "udp", addr, name, dns.TypeA, 0)), want)
		})
		t.Logf("%s: visible after %v", what, time.Since(start))
	}

	put(t, st, eps("default", "web", subset(ready(at("web-a", "10.0.0.1"), at("web-e", "10.0.0.5")))))
	expect("a new endpoint", web, "10.0.0.1", "10.0.0.5")
	put(t, st, eps("default", "down", subset(ready(at("down-a", "10.0.9.1")))))
	expect("an endpoint turning ready", "down.default.svc.cluster.local.", "10.0.9.1")
	put(t, st, svc("default", "late"), eps("default", "late", subset(ready(at("late-a", "10.0.7.1")))))
	expect("a new service", "late.default.svc.cluster.local.", "10.0.7.1")
	if _, err := st.Delete(context.Background(), serviceKind, "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("a deleted service", web)
	if m := ask(t, "udp", addr, web, dns.TypeA, 0); m.Rcode != dns.RcodeNameError {
		t.Errorf("deleted service: %s", dns.RcodeToString[m.Rcode])
	}
}

// TestServerFollowsNamespaces: <ns>.svc.<zone> is NODATA while the store
// has the namespace, services or not, and NXDOMAIN once it is deleted.
func TestServerFollowsNamespaces(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, namespace("quiet"), namespace("default"))
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{}, nil)
	addr := srv.Addr()
	expect := func(what, name string, rcode int) {
		t.Helper()
		waitFor(t, time.Second, what, func() bool {
			m := ask(t, "udp", addr, name, dns.TypeA, 0)
			return m.Rcode == rcode && len(m.Answer) == 0 && hasSOA(m)
		})
	}
	expect("a namespace without services", "quiet.svc.cluster.local.", dns.RcodeSuccess)
	expect("a missing service of it", "web.quiet.svc.cluster.local.", dns.RcodeNameError)
	expect("a namespace the store lacks", "loud.svc.cluster.local.", dns.RcodeNameError)

	put(t, st, namespace("loud"))
	expect("a new namespace", "loud.svc.cluster.local.", dns.RcodeSuccess)
	ctx := context.Background()
	for _, name := range []string{"web", "ext", "down"} {
		if _, err := st.Delete(ctx, serviceKind, "default", name, store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expect("the last service gone", "web.default.svc.cluster.local.", dns.RcodeNameError)
	expect("a namespace whose services are gone", "default.svc.cluster.local.", dns.RcodeSuccess)
	if _, err := st.Delete(ctx, namespaceKind, "", "quiet", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("a deleted namespace", "quiet.svc.cluster.local.", dns.RcodeNameError)
}

// TestServerPodNames: <dashed-ip>.<ns>.pod.<zone> answers the address it
// spells in a namespace the store has, as CoreDNS's "pods insecure" mode.
func TestServerPodNames(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, namespace("default"))
	srv := startServer(t, st, Options{}, nil)
	tests := []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
	}{
		{"10-0-0-9.default.pod.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"10.0.0.9"}},
		{"fd00--9.default.pod.cluster.local.", dns.TypeAAAA, dns.RcodeSuccess, []string{"fd00::9"}},
		{"10-0-0-9.default.pod.cluster.local.", dns.TypeAAAA, dns.RcodeSuccess, nil},
		{"10-0-0-9.kube-system.pod.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"not-an-ip.default.pod.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tt := range tests {
			t.Run(network+"/"+tt.name+"/"+dns.TypeToString[tt.qtype], func(t *testing.T) {
				m := askWant(t, network, srv.Addr(), tt.name, tt.qtype, tt.rcode, tt.want)
				if (len(tt.want) == 0) != hasSOA(m) || !m.Authoritative {
					t.Errorf("authority %v, AA %v", m.Ns, m.Authoritative)
				}
			})
		}
	}
	put(t, st, namespace("kube-system"))
	waitFor(t, time.Second, "a new namespace's pod names", func() bool {
		return slices.Equal(answers(ask(t, "udp", srv.Addr(), "10-0-0-9.kube-system.pod.cluster.local.", dns.TypeA, 0)), []string{"10.0.0.9"})
	})
}

// TestServerPTR: the reverse names of ready endpoints' addresses are
// answered from the table, any other goes upstream (and without one is
// REFUSED), as CoreDNS falls through for in-addr.arpa and ip6.arpa.
func TestServerPTR(t *testing.T) {
	upstream := stubUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if r.Question[0].Name == "1.2.0.192.in-addr.arpa." {
			rr, _ := dns.NewRR("1.2.0.192.in-addr.arpa. 60 IN PTR host.example.")
			m.Answer = append(m.Answer, rr)
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{Upstream: upstream}, nil)
	none := startServer(t, st, Options{Upstream: UpstreamNone}, nil)
	const web = "web.default.svc.cluster.local."
	for _, network := range []string{"udp", "tcp"} {
		ptrs := []string{"1.0.0.10.in-addr.arpa.\t5\tIN\tPTR\tweb-a." + web, "1.0.0.10.in-addr.arpa.\t5\tIN\tPTR\tweb-b." + web}
		if m := askWant(t, network, srv.Addr(), "1.0.0.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, ptrs); !m.Authoritative {
			t.Errorf("%s: PTR of 10.0.0.1 not authoritative", network)
		}
		askWant(t, network, srv.Addr(), "1.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"1.2.0.192.in-addr.arpa.\t60\tIN\tPTR\thost.example."})
		askWant(t, network, srv.Addr(), "3.0.0.10.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, nil) // web-d is not ready
		askWant(t, network, none.Addr(), "1.0.0.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, ptrs)
		askWant(t, network, none.Addr(), "1.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeRefused, nil)
	}
}

// TestServerSerialFollowsChanges: the server dates changes on its
// injected clock; the SOA's serial moves when the store's records do.
func TestServerSerialFollowsChanges(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{Clock: clk}, nil)
	serial := func() uint32 {
		m := ask(t, "udp", srv.Addr(), "cluster.local.", dns.TypeSOA, 0)
		if len(m.Answer) != 1 {
			t.Fatalf("SOA: %v", m)
		}
		return m.Answer[0].(*dns.SOA).Serial
	}
	if got := serial(); got != 1000 {
		t.Errorf("serial %d, want 1000", got)
	}
	clk.SetTime(time.Unix(2000, 0))
	put(t, st, eps("default", "web", subset(ready(at("web-a", "10.0.0.1")))))
	waitFor(t, time.Second, "the serial to move", func() bool { return serial() == 2000 })
}

// TestServerRelistsWhenBehind gives the store a watcher queue of two
// events: one transaction of fifty services leaves the follower behind,
// and it must list again to see them.
func TestServerRelistsWhenBehind(t *testing.T) {
	st := newStore(t, store.Options{WatcherQueue: 2})
	srv := startServer(t, st, Options{}, nil)
	var objs []api.Object
	for i := range 50 {
		name := fmt.Sprintf("s%d", i)
		objs = append(objs, svc("default", name), manyEndpoints("default", name, 1, i+1))
	}
	put(t, st, objs...)
	// Each: the service's A, the endpoint's A, one SRV of _http._tcp and
	// one of the service's name. The table may hold a part of them while
	// it lists again (what the watch gave before it was lost): wait for
	// the whole.
	waitFor(t, 5*time.Second, "every service", func() bool {
		return srv.Table().Records() == 50*4 &&
			len(ask(t, "udp", srv.Addr(), "s49.default.svc.cluster.local.", dns.TypeA, 0).Answer) == 1 &&
			len(ask(t, "udp", srv.Addr(), "s0.default.svc.cluster.local.", dns.TypeA, 0).Answer) == 1
	})
	if n := srv.follower.lists.Load(); n < 2 {
		t.Errorf("listed %d times; the watch was not lost (the test tests nothing)", n)
	}
}

func TestServerMetricsAndHealth(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{}, nil)
	ask(t, "udp", srv.Addr(), "web.default.svc.cluster.local.", dns.TypeA, 0)
	ask(t, "udp", srv.Addr(), "nothing.default.svc.cluster.local.", dns.TypeAAAA, 0)
	wants := []string{
		`berth_dns_requests_total{rcode="NOERROR",type="A"} 1`,
		`berth_dns_requests_total{rcode="NXDOMAIN",type="AAAA"} 1`,
		`berth_dns_request_duration_seconds_count 2`,
		`berth_dns_forwarded_requests_total 0`,
		`berth_dns_write_failures_total 0`,
		// web: 2 A, 3 endpoint A, 3 SRV of _http._tcp and 3 of its own
		// name; ext: 1 CNAME; down: nothing ready.
		`berth_dns_records 12`,
	}
	// A request is counted after its answer is sent, so the client can
	// read the answer before the count moves: poll.
	testtool.WaitFor(t, 5*time.Second, "the request metrics", func() error {
		metrics := get(t, "http://"+srv.MetricsAddr()+"/metrics")
		for _, want := range wants {
			if !strings.Contains(metrics, want) {
				return fmt.Errorf("metrics lack %q:\n%s", want, grep(metrics, "berth_dns"))
			}
		}
		return nil
	})
	if code := status(t, "http://"+srv.HealthAddr()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
}

// TestServerRejectsPortInUse: a second server cannot take a port a first
// one holds, although several UDP sockets share it.
func TestServerRejectsPortInUse(t *testing.T) {
	st := newStore(t, store.Options{})
	srv := startServer(t, st, Options{UDPReaders: 2}, nil)
	if len(srv.udp) != 2 && reusePort {
		t.Errorf("%d UDP readers, want 2", len(srv.udp))
	}
	s2, err := New(st, Options{Listen: srv.Addr(), Upstream: UpstreamNone, Logger: quietLogger()})
	if err == nil {
		s2.Close()
		t.Fatal("a second server bound the same port")
	}
}

// TestServerWildcard listens on every address: answers must leave from
// the address each question came to (IP_PKTINFO), or clients drop them.
func TestServerWildcard(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{Listen: ":0"}, nil)
	_, port, _ := net.SplitHostPort(srv.Addr())
	for _, network := range []string{"udp", "tcp"} {
		m := ask(t, network, net.JoinHostPort("127.0.0.1", port), "web.default.svc.cluster.local.", dns.TypeA, 0)
		if len(m.Answer) != 2 {
			t.Errorf("%s: %v", network, m)
		}
	}
	if !newUDPSocket(srv.udp[0]).pktinfo {
		t.Error("a wildcard socket without IP_PKTINFO")
	}
}

func TestDig(t *testing.T) {
	dig := testtool.Need(t, "dig")
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{}, nil)
	_, port, _ := net.SplitHostPort(srv.Addr())
	for _, proto := range []string{"+notcp", "+tcp"} {
		out, err := exec.Command(dig, "@127.0.0.1", "-p", port, "web.default.svc.cluster.local", "+short", proto).CombinedOutput()
		if err != nil {
			t.Fatalf("dig: %v\n%s", err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		if !slices.Equal(got, []string{"10.0.0.1", "10.0.0.2"}) {
			t.Errorf("dig %s: %q", proto, got)
		}
	}
	out, err := exec.Command(dig, "@127.0.0.1", "-p", port, "_http._tcp.web.default.svc.cluster.local", "SRV", "+short").CombinedOutput()
	if err != nil || len(strings.Split(strings.TrimSpace(string(out)), "\n")) != 3 {
		t.Errorf("dig SRV: %v\n%s", err, out)
	}
	if testing.Verbose() {
		full, _ := exec.Command(dig, "@127.0.0.1", "-p", port, "_http._tcp.web.default.svc.cluster.local", "SRV").CombinedOutput()
		fmt.Fprintf(os.Stderr, "%s", full)
	}
}

func get(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func status(t testing.TB, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestServerChasesExternalName: an ExternalName service is answered as a
// recursive server answers a CNAME, since the resolvers that ask berth do
// not follow one themselves: the CNAME, then the target's records, from
// the upstream for a name outside the zone and from the table for one in
// it. Go's own resolver finds the addresses.
func TestServerChasesExternalName(t *testing.T) {
	var asked atomic.Int64
	upstream := stubUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		asked.Add(1)
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		switch {
		case q.Name == "example.com." && q.Qtype == dns.TypeA:
			rr, _ := dns.NewRR("example.com. 60 IN A 192.0.2.1")
			m.Answer = append(m.Answer, rr)
		case q.Name == "example.com." && q.Qtype == dns.TypeAAAA:
			rr, _ := dns.NewRR("example.com. 60 IN AAAA 2001:db8::1")
			m.Answer = append(m.Answer, rr)
		case q.Name == "example.com.":
			rr, _ := dns.NewRR("example.com. 60 IN SOA ns.example.com. hostmaster.example.com. 1 2 3 4 60")
			m.Ns = append(m.Ns, rr)
		case q.Name == "broken.example.":
			m.Rcode = dns.RcodeRefused
		default:
			rr, _ := dns.NewRR("example. 60 IN SOA ns.example. hostmaster.example. 1 2 3 4 60")
			m.Ns = append(m.Ns, rr)
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	st := newStore(t, store.Options{})
	put(t, st, append(clusterObjects(),
		svc("default", "alias", externalName("web.default.svc.cluster.local")),
		svc("default", "hop", externalName("ext.default.svc.cluster.local")),
		svc("default", "nowhere", externalName("nowhere.example")),
		svc("default", "broken", externalName("broken.example")),
	)...)
	srv := startServer(t, st, Options{Upstream: upstream}, nil)
	const ext = "ext.default.svc.cluster.local."
	tests := []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
		soa   string // the owner of the SOA in the authority section, if any
	}{
		{ext, dns.TypeA, dns.RcodeSuccess, []string{"CNAME example.com.", "192.0.2.1"}, ""},
		{"Ext.Default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"CNAME example.com.", "192.0.2.1"}, ""},
		{ext, dns.TypeAAAA, dns.RcodeSuccess, []string{"CNAME example.com.", "2001:db8::1"}, ""},
		{ext, dns.TypeTXT, dns.RcodeSuccess, []string{"CNAME example.com."}, "example.com."},
		{ext, dns.TypeCNAME, dns.RcodeSuccess, []string{"CNAME example.com."}, ""},
		{"hop.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"CNAME " + ext, "CNAME example.com.", "192.0.2.1"}, ""},
		{"alias.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"CNAME web.default.svc.cluster.local.", "10.0.0.1", "10.0.0.2"}, ""},
		{"alias.default.svc.cluster.local.", dns.TypeAAAA, dns.RcodeSuccess, []string{"CNAME web.default.svc.cluster.local."}, "cluster.local."},
		{"nowhere.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, []string{"CNAME nowhere.example."}, "example."},
		{"broken.default.svc.cluster.local.", dns.TypeA, dns.RcodeServerFailure, nil, ""},
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tt := range tests {
			t.Run(network+"/"+tt.name+"/"+dns.TypeToString[tt.qtype], func(t *testing.T) {
				m := askWant(t, network, srv.Addr(), tt.name, tt.qtype, tt.rcode, tt.want)
				var soa string
				if len(m.Ns) == 1 && m.Ns[0].Header().Rrtype == dns.TypeSOA {
					soa = m.Ns[0].Header().Name
				}
				if soa != tt.soa || len(m.Ns) > 1 {
					t.Errorf("authority %v, want the SOA of %q", m.Ns, tt.soa)
				}
				if m.Question[0].Name != tt.name || !m.RecursionAvailable {
					t.Errorf("question echoed as %q, RA %v", m.Question[0].Name, m.RecursionAvailable)
				}
			})
		}
	}

	// A question for the CNAME itself, or a target in the zone, does not
	// ask the upstream.
	before := asked.Load()
	ask(t, "udp", srv.Addr(), ext, dns.TypeCNAME, 0)
	ask(t, "udp", srv.Addr(), "alias.default.svc.cluster.local.", dns.TypeA, 0)
	if n := asked.Load() - before; n != 0 {
		t.Errorf("the upstream was asked %d times", n)
	}

	// Go's resolver follows no CNAME: it finds the addresses only because
	// the answer carries them.
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Addr())
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for name, want := range map[string][]string{
		"ext.default.svc.cluster.local":   {"192.0.2.1", "2001:db8::1"},
		"alias.default.svc.cluster.local": {"10.0.0.1", "10.0.0.2"},
	} {
		addrs, err := r.LookupHost(ctx, name)
		slices.Sort(addrs)
		if err != nil || !slices.Equal(addrs, want) {
			t.Errorf("Go's resolver, %s: %q, %v; want %q", name, addrs, err, want)
		}
	}
}

// TestServerExternalNameWithoutUpstream: with --dns-upstream none the
// CNAME of a target outside the zone is all there is to answer.
func TestServerExternalNameWithoutUpstream(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, clusterObjects()...)
	srv := startServer(t, st, Options{Upstream: UpstreamNone}, nil)
	for _, network := range []string{"udp", "tcp"} {
		m := ask(t, network, srv.Addr(), "ext.default.svc.cluster.local.", dns.TypeA, 0)
		if m.Rcode != dns.RcodeSuccess || !slices.Equal(answers(m), []string{"CNAME example.com."}) || m.RecursionAvailable {
			t.Errorf("%s: %v", network, m)
		}
	}
}

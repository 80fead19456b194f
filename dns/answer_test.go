package dns

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
)

// Builders of the objects the table is made from.

func svc(ns, name string, mods ...func(*api.Service)) *api.Service {
	s := &api.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       api.ServiceSpec{Selector: map[string]string{"app": name}},
	}
	for _, m := range mods {
		m(s)
	}
	return s
}

func externalName(target string) func(*api.Service) {
	return func(s *api.Service) {
		s.Spec.Type, s.Spec.ExternalName, s.Spec.Selector = api.ServiceTypeExternalName, target, nil
	}
}

func publishNotReady(s *api.Service) { s.Spec.PublishNotReadyAddresses = true }

func namespace(name string) *api.Namespace {
	return &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func eps(ns, name string, subsets ...api.EndpointSubset) *api.Endpoints {
	return &api.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Subsets: subsets}
}

func ready(addrs ...api.EndpointAddress) func(*api.EndpointSubset) {
	return func(s *api.EndpointSubset) { s.Addresses = append(s.Addresses, addrs...) }
}

func notReady(addrs ...api.EndpointAddress) func(*api.EndpointSubset) {
	return func(s *api.EndpointSubset) { s.NotReadyAddresses = append(s.NotReadyAddresses, addrs...) }
}

func ports(ps ...api.EndpointPort) func(*api.EndpointSubset) {
	return func(s *api.EndpointSubset) { s.Ports = append(s.Ports, ps...) }
}

func subset(mods ...func(*api.EndpointSubset)) api.EndpointSubset {
	var s api.EndpointSubset
	for _, m := range mods {
		m(&s)
	}
	return s
}

// at is an address with a hostname, as the endpoints controller writes it.
func at(host, ip string) api.EndpointAddress {
	return api.EndpointAddress{IP: ip, Hostname: host, TargetRef: &api.ObjectReference{Kind: "Pod", Name: host}}
}

// fill puts services and their Endpoints in a table and marks it synced.
func fill(t testing.TB, tbl *Table, objs ...any) {
	t.Helper()
	services := map[string]*api.Service{}
	endpoints := map[string]*api.Endpoints{}
	for _, o := range objs {
		switch o := o.(type) {
		case *api.Service:
			services[objectKey(o)] = o
		case *api.Endpoints:
			endpoints[objectKey(o)] = o
		default:
			t.Fatalf("fill: %T", o)
		}
	}
	var changes []change
	for key, s := range services {
		changes = append(changes, change{key: serviceKey(s.Namespace, s.Name), entry: buildEntry(tbl.zone, s, endpoints[key])})
	}
	tbl.apply(changes)
	tbl.MarkSynced()
}

func newTable(t testing.TB) *Table {
	t.Helper()
	// The clock stands at 1s past the epoch: the SOA's serial is 1.
	tbl, err := makeTable("cluster.local", testingclock.NewFakePassiveClock(time.Unix(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// testZone is the zone of the answer tests: every row of SPEC §6.
func testZone(t testing.TB) *Table {
	tbl := newTable(t)
	http := api.EndpointPort{Name: "http", Port: 8080, Protocol: api.ProtocolTCP}
	dnsPort := api.EndpointPort{Name: "dns", Port: 5353, Protocol: api.ProtocolUDP}
	unnamed := api.EndpointPort{Port: 9000}
	fill(t, tbl,
		svc("default", "web"),
		eps("default", "web",
			// Two pods share a node's IP (the exec runtime): one A record.
			subset(ready(at("web-a", "10.0.0.1"), at("web-b", "10.0.0.1"), at("web-c", "10.0.0.2")),
				notReady(at("web-d", "10.0.0.3")), ports(http, dnsPort, unnamed)),
		),
		svc("default", "empty"),
		eps("default", "empty", subset(notReady(at("empty-a", "10.0.1.1")), ports(http))),
		svc("default", "none"),
		svc("default", "eager", publishNotReady),
		eps("default", "eager", subset(notReady(at("eager-a", "10.0.2.1")))),
		svc("default", "ext", externalName("Example.COM")),
		// ExternalName services that name the zone: a chain to web, one
		// that leaves the zone through ext, a loop, and a dangling one.
		svc("default", "alias", externalName("web.default.svc.cluster.local")),
		svc("default", "alias2", externalName("alias.default.svc.cluster.local.")),
		svc("default", "hop", externalName("ext.default.svc.cluster.local")),
		svc("default", "loop-a", externalName("loop-b.default.svc.cluster.local")),
		svc("default", "loop-b", externalName("loop-a.default.svc.cluster.local")),
		svc("default", "dangling", externalName("gone.default.svc.cluster.local")),
		svc("other", "v6"),
		eps("other", "v6", subset(ready(at("v6-a", "fd00::1"), api.EndpointAddress{IP: "10.0.3.9"}))),
	)
	tbl.SetNamespaces([]string{"quiet"}) // a namespace without services
	return tbl
}

func TestLookup(t *testing.T) {
	tbl := testZone(t)
	const (
		soa     = "cluster.local.\t5\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"
		nodata  = "NOERROR nodata"
		nx      = "NXDOMAIN"
		fwd     = "forward"
		webName = "web.default.svc.cluster.local."
		// The CNAMEs of ExternalName services.
		extCNAME   = "ext.default.svc.cluster.local.\t5\tIN\tCNAME\texample.com."
		aliasCNAME = "alias.default.svc.cluster.local.\t5\tIN\tCNAME\t" + webName
	)
	tests := []struct {
		name  string
		qtype uint16
		rcode string // NOERROR, NXDOMAIN, NOERROR nodata, SERVFAIL, forward or chase <name>
		want  []string
		extra []string
	}{
		{webName, dns.TypeA, "NOERROR", []string{webName + "\t5\tIN\tA\t10.0.0.1", webName + "\t5\tIN\tA\t10.0.0.2"}, nil},
		{"WEB.Default.SVC.Cluster.LOCAL.", dns.TypeA, "NOERROR", []string{webName + "\t5\tIN\tA\t10.0.0.1", webName + "\t5\tIN\tA\t10.0.0.2"}, nil},
		{"web.default.svc.cluster.local", dns.TypeA, "NOERROR", []string{webName + "\t5\tIN\tA\t10.0.0.1", webName + "\t5\tIN\tA\t10.0.0.2"}, nil},
		{webName, dns.TypeAAAA, nodata, nil, nil},
		{webName, dns.TypeTXT, nodata, nil, nil},
		// One SRV per ready endpoint and port, named or not.
		{webName, dns.TypeSRV, "NOERROR", []string{
			webName + "\t5\tIN\tSRV\t0 11 5353 web-a." + webName,
			webName + "\t5\tIN\tSRV\t0 11 8080 web-a." + webName,
			webName + "\t5\tIN\tSRV\t0 11 9000 web-a." + webName,
			webName + "\t5\tIN\tSRV\t0 11 5353 web-b." + webName,
			webName + "\t5\tIN\tSRV\t0 11 8080 web-b." + webName,
			webName + "\t5\tIN\tSRV\t0 11 9000 web-b." + webName,
			webName + "\t5\tIN\tSRV\t0 11 5353 web-c." + webName,
			webName + "\t5\tIN\tSRV\t0 11 8080 web-c." + webName,
			webName + "\t5\tIN\tSRV\t0 11 9000 web-c." + webName,
		}, []string{
			"web-a." + webName + "\t5\tIN\tA\t10.0.0.1",
			"web-b." + webName + "\t5\tIN\tA\t10.0.0.1",
			"web-c." + webName + "\t5\tIN\tA\t10.0.0.2",
		}},
		{"eager.default.svc.cluster.local.", dns.TypeSRV, nodata, nil, nil}, // no ports
		{"empty.default.svc.cluster.local.", dns.TypeSRV, nx, nil, nil},
		{"_http._tcp." + webName, dns.TypeSRV, "NOERROR", []string{
			"_http._tcp." + webName + "\t5\tIN\tSRV\t0 33 8080 web-a." + webName,
			"_http._tcp." + webName + "\t5\tIN\tSRV\t0 33 8080 web-b." + webName,
			"_http._tcp." + webName + "\t5\tIN\tSRV\t0 33 8080 web-c." + webName,
		}, []string{
			"web-a." + webName + "\t5\tIN\tA\t10.0.0.1",
			"web-b." + webName + "\t5\tIN\tA\t10.0.0.1",
			"web-c." + webName + "\t5\tIN\tA\t10.0.0.2",
		}},
		{"_DNS._UDP.Web.Default.svc.cluster.local.", dns.TypeSRV, "NOERROR", []string{
			"_dns._udp." + webName + "\t5\tIN\tSRV\t0 33 5353 web-a." + webName,
			"_dns._udp." + webName + "\t5\tIN\tSRV\t0 33 5353 web-b." + webName,
			"_dns._udp." + webName + "\t5\tIN\tSRV\t0 33 5353 web-c." + webName,
		}, []string{
			"web-a." + webName + "\t5\tIN\tA\t10.0.0.1",
			"web-b." + webName + "\t5\tIN\tA\t10.0.0.1",
			"web-c." + webName + "\t5\tIN\tA\t10.0.0.2",
		}},
		{"_http._tcp." + webName, dns.TypeA, nodata, nil, nil},
		{"_http._udp." + webName, dns.TypeSRV, nx, nil, nil},
		{"_tcp." + webName, dns.TypeSRV, nodata, nil, nil}, // an empty non-terminal
		{"_sctp." + webName, dns.TypeSRV, nx, nil, nil},
		{"x._http._tcp." + webName, dns.TypeSRV, nx, nil, nil},
		{"web-a." + webName, dns.TypeA, "NOERROR", []string{"web-a." + webName + "\t5\tIN\tA\t10.0.0.1"}, nil},
		{"WEB-C." + webName, dns.TypeA, "NOERROR", []string{"web-c." + webName + "\t5\tIN\tA\t10.0.0.2"}, nil},
		{"web-a." + webName, dns.TypeAAAA, nodata, nil, nil},
		{"web-d." + webName, dns.TypeA, nx, nil, nil}, // not ready
		{"nobody." + webName, dns.TypeA, nx, nil, nil},
		{"empty.default.svc.cluster.local.", dns.TypeA, nx, nil, nil}, // no ready endpoint
		{"_http._tcp.empty.default.svc.cluster.local.", dns.TypeSRV, nx, nil, nil},
		{"none.default.svc.cluster.local.", dns.TypeA, nx, nil, nil}, // no Endpoints at all
		{"eager.default.svc.cluster.local.", dns.TypeA, "NOERROR", []string{"eager.default.svc.cluster.local.\t5\tIN\tA\t10.0.2.1"}, nil},
		{"ext.default.svc.cluster.local.", dns.TypeA, "chase example.com.", []string{extCNAME}, nil},
		{"ext.default.svc.cluster.local.", dns.TypeAAAA, "chase example.com.", []string{extCNAME}, nil},
		{"ext.default.svc.cluster.local.", dns.TypeCNAME, "NOERROR", []string{extCNAME}, nil},
		{"ext.default.svc.cluster.local.", dns.TypeANY, "NOERROR", []string{extCNAME}, nil},
		{"alias.default.svc.cluster.local.", dns.TypeA, "NOERROR", []string{aliasCNAME, webName + "\t5\tIN\tA\t10.0.0.1", webName + "\t5\tIN\tA\t10.0.0.2"}, nil},
		{"Alias.Default.svc.cluster.local.", dns.TypeA, "NOERROR", []string{aliasCNAME, webName + "\t5\tIN\tA\t10.0.0.1", webName + "\t5\tIN\tA\t10.0.0.2"}, nil},
		{"alias.default.svc.cluster.local.", dns.TypeCNAME, "NOERROR", []string{aliasCNAME}, nil},
		{"alias.default.svc.cluster.local.", dns.TypeAAAA, nodata, []string{aliasCNAME}, nil}, // web has no AAAA
		{"alias2.default.svc.cluster.local.", dns.TypeA, "NOERROR", []string{
			"alias2.default.svc.cluster.local.\t5\tIN\tCNAME\talias.default.svc.cluster.local.",
			aliasCNAME, webName + "\t5\tIN\tA\t10.0.0.1", webName + "\t5\tIN\tA\t10.0.0.2",
		}, nil},
		{"hop.default.svc.cluster.local.", dns.TypeA, "chase example.com.", []string{
			"hop.default.svc.cluster.local.\t5\tIN\tCNAME\text.default.svc.cluster.local.", extCNAME,
		}, nil},
		{"loop-a.default.svc.cluster.local.", dns.TypeA, "NOERROR", []string{
			"loop-a.default.svc.cluster.local.\t5\tIN\tCNAME\tloop-b.default.svc.cluster.local.",
			"loop-b.default.svc.cluster.local.\t5\tIN\tCNAME\tloop-a.default.svc.cluster.local.",
		}, nil},
		{"dangling.default.svc.cluster.local.", dns.TypeA, nx, []string{
			"dangling.default.svc.cluster.local.\t5\tIN\tCNAME\tgone.default.svc.cluster.local.",
		}, nil},
		{"v6.other.svc.cluster.local.", dns.TypeAAAA, "NOERROR", []string{"v6.other.svc.cluster.local.\t5\tIN\tAAAA\tfd00::1"}, nil},
		{"v6.other.svc.cluster.local.", dns.TypeANY, "NOERROR", []string{"v6.other.svc.cluster.local.\t5\tIN\tA\t10.0.3.9", "v6.other.svc.cluster.local.\t5\tIN\tAAAA\tfd00::1"}, nil},
		{"10-0-3-9.v6.other.svc.cluster.local.", dns.TypeA, "NOERROR", []string{"10-0-3-9.v6.other.svc.cluster.local.\t5\tIN\tA\t10.0.3.9"}, nil},
		{"dns-version.cluster.local.", dns.TypeTXT, "NOERROR", []string{"dns-version.cluster.local.\t5\tIN\tTXT\t\"1.1.0\""}, nil},
		{"DNS-VERSION.cluster.local.", dns.TypeA, nodata, nil, nil},
		{"cluster.local.", dns.TypeSOA, "NOERROR", []string{soa}, nil},
		{"cluster.local.", dns.TypeNS, nodata, nil, nil},
		{"svc.cluster.local.", dns.TypeA, nodata, nil, nil},
		{"default.svc.cluster.local.", dns.TypeA, nodata, nil, nil},
		{"nowhere.svc.cluster.local.", dns.TypeA, nx, nil, nil},
		{"quiet.svc.cluster.local.", dns.TypeA, nodata, nil, nil},
		{"web.quiet.svc.cluster.local.", dns.TypeA, nx, nil, nil},
		{"web.nowhere.svc.cluster.local.", dns.TypeA, nx, nil, nil},
		{"web.default.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"10-0-0-9.default.pod.cluster.local.", dns.TypeA, "NOERROR", []string{"10-0-0-9.default.pod.cluster.local.\t5\tIN\tA\t10.0.0.9"}, nil},
		{"10-0-0-9.quiet.pod.cluster.local.", dns.TypeA, "NOERROR", []string{"10-0-0-9.quiet.pod.cluster.local.\t5\tIN\tA\t10.0.0.9"}, nil},
		{"10-0-0-9.Default.POD.cluster.local.", dns.TypeANY, "NOERROR", []string{"10-0-0-9.default.pod.cluster.local.\t5\tIN\tA\t10.0.0.9"}, nil},
		{"10-0-0-9.default.pod.cluster.local.", dns.TypeAAAA, nodata, nil, nil},
		{"fd00--1.other.pod.cluster.local.", dns.TypeAAAA, "NOERROR", []string{"fd00--1.other.pod.cluster.local.\t5\tIN\tAAAA\tfd00::1"}, nil},
		{"FD00-0-0-0-0-0-0-A.other.pod.cluster.local.", dns.TypeAAAA, "NOERROR", []string{"fd00-0-0-0-0-0-0-a.other.pod.cluster.local.\t5\tIN\tAAAA\tfd00::a"}, nil},
		{"--ffff-a00-9.default.pod.cluster.local.", dns.TypeA, "NOERROR", []string{"--ffff-a00-9.default.pod.cluster.local.\t5\tIN\tA\t10.0.0.9"}, nil},
		{"fd00--1.other.pod.cluster.local.", dns.TypeA, nodata, nil, nil},
		{"10-0-0-9.nowhere.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"10-0-0.default.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"10-0-0-256.default.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"010-0-0-9.default.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"x.10-0-0-9.default.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"default.pod.cluster.local.", dns.TypeA, nodata, nil, nil},
		{"quiet.pod.cluster.local.", dns.TypeA, nodata, nil, nil},
		{"nowhere.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"pod.cluster.local.", dns.TypeA, nodata, nil, nil},
		{"anything.cluster.local.", dns.TypeA, nx, nil, nil},
		{"a.b.c.web.default.svc.cluster.local.", dns.TypeA, nx, nil, nil},
		{"example.com.", dns.TypeA, fwd, nil, nil},
		{"xcluster.local.", dns.TypeA, fwd, nil, nil},
		{"local.", dns.TypeSOA, fwd, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+dns.TypeToString[tt.qtype], func(t *testing.T) {
			ans := tbl.Lookup(tt.name, tt.qtype)
			if got := describe(ans); got != tt.rcode {
				t.Fatalf("answer is %s, want %s", got, tt.rcode)
			}
			if got := rrStrings(ans.Answer); !slices.Equal(got, tt.want) {
				t.Errorf("answer:\n got %q\nwant %q", got, tt.want)
			}
			if got := rrStrings(ans.Extra); !slices.Equal(got, tt.extra) {
				t.Errorf("extra:\n got %q\nwant %q", got, tt.extra)
			}
			negative := tt.rcode == nx || tt.rcode == nodata
			if negative != (len(ans.Ns) == 1 && ans.Ns[0].String() == soa) {
				t.Errorf("authority = %q; want the SOA only in negative answers", rrStrings(ans.Ns))
			}
		})
	}
}

func TestLookupBeforeSync(t *testing.T) {
	tbl := newTable(t)
	for _, name := range []string{"web.default.svc.cluster.local.", "example.com."} {
		if ans := tbl.Lookup(name, dns.TypeA); ans.Rcode != dns.RcodeServerFailure || ans.Forward {
			t.Errorf("%s before sync: %+v, want SERVFAIL", name, ans)
		}
	}
}

// TestTableIncremental changes one service and checks that the others'
// entries are the very same, that the record count follows, and that a
// namespace's name goes with its last service.
func TestTableIncremental(t *testing.T) {
	tbl := testZone(t)
	before := tbl.Records()
	// web: 2 A, 3 host A, 6 SRV of named ports, 9 of its own name; eager:
	// 1 A + 1 host; ext, alias, alias2, hop, loop-a, loop-b, dangling: 1
	// CNAME each; v6: 1 A + 1 AAAA + 2 host.
	if want := 20 + 2 + 7 + 4; before != want {
		t.Errorf("records = %d, want %d", before, want)
	}
	ext := tbl.get("ext.default")
	web := eps("default", "web", subset(ready(at("web-a", "10.0.0.1")), ports(api.EndpointPort{Name: "http", Port: 8080})))
	tbl.apply([]change{{key: "web.default", entry: buildEntry(tbl.zone, svc("default", "web"), web)}})
	if tbl.get("ext.default") != ext {
		t.Error("a change to web rebuilt ext")
	}
	if got := rrStrings(tbl.Lookup("web.default.svc.cluster.local.", dns.TypeA).Answer); len(got) != 1 {
		t.Errorf("web after the change: %q", got)
	}
	if got, want := tbl.Records(), before-20+4; got != want {
		t.Errorf("records = %d, want %d", got, want)
	}

	tbl.apply([]change{{key: "v6.other"}})
	if ans := tbl.Lookup("other.svc.cluster.local.", dns.TypeA); ans.Rcode != dns.RcodeNameError {
		t.Errorf("namespace without services: %s, want NXDOMAIN", describe(ans))
	}
	if ans := tbl.Lookup("default.svc.cluster.local.", dns.TypeA); describe(ans) != "NOERROR nodata" {
		t.Errorf("namespace with services: %s, want NODATA", describe(ans))
	}
}

// TestTableNamespaces: a namespace the store has exists in DNS whether or
// not it holds a service to answer for; one it does not have, only while
// a service of the table's is in it.
func TestTableNamespaces(t *testing.T) {
	tbl := testZone(t)
	tbl.SetNamespaces([]string{"quiet", "Other"})
	tests := []struct {
		name, want string
	}{
		{"quiet.svc.cluster.local.", "NOERROR nodata"},
		{"QUIET.svc.cluster.local.", "NOERROR nodata"},
		{"missing.quiet.svc.cluster.local.", "NXDOMAIN"},
		{"_http._tcp.missing.quiet.svc.cluster.local.", "NXDOMAIN"},
		{"other.svc.cluster.local.", "NOERROR nodata"},
		{"default.svc.cluster.local.", "NOERROR nodata"}, // its services' namespace
		{"nowhere.svc.cluster.local.", "NXDOMAIN"},
	}
	check := func(when string) {
		t.Helper()
		for _, tt := range tests {
			if got := describe(tbl.Lookup(tt.name, dns.TypeA)); got != tt.want {
				t.Errorf("%s: %s A: %s, want %s", when, tt.name, got, tt.want)
			}
		}
	}
	check("with the store's namespaces")
	// other's last service goes; the namespace stays.
	tbl.apply([]change{{key: "v6.other"}})
	check("other without services")
	tbl.SetNamespaces(nil)
	tests = []struct{ name, want string }{
		{"quiet.svc.cluster.local.", "NXDOMAIN"},
		{"other.svc.cluster.local.", "NXDOMAIN"},
		{"default.svc.cluster.local.", "NOERROR nodata"},
	}
	check("the namespaces deleted")
}

func TestNewTableRejectsBadZones(t *testing.T) {
	for _, z := range []string{".", "", "a..b"} {
		if _, err := NewTable(z); err == nil {
			t.Errorf("NewTable(%q) succeeded", z)
		}
	}
}

func describe(a Answer) string {
	switch {
	case a.Forward:
		return "forward"
	case a.Chase != "":
		return "chase " + a.Chase
	case a.Rcode == dns.RcodeSuccess && len(a.Ns) > 0:
		return "NOERROR nodata" // the table's answers have an authority section only when negative
	}
	return dns.RcodeToString[a.Rcode]
}

func rrStrings(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, rr.String())
	}
	return out
}

// TestLookupPTR: the reverse name of an endpoint's address answers its
// names under every service that publishes it; other reverse names, and
// other types, are the upstream's.
func TestLookupPTR(t *testing.T) {
	tbl := testZone(t)
	// api shares web's pod web-c, at 10.0.0.2.
	fill(t, tbl, svc("default", "api"), eps("default", "api", subset(ready(at("web-c", "10.0.0.2")))))
	const (
		web = "web.default.svc.cluster.local."
		v6  = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa."
	)
	tests := []struct {
		name  string
		qtype uint16
		want  []string // nil: forward
	}{
		{"1.0.0.10.in-addr.arpa.", dns.TypePTR, []string{"web-a." + web, "web-b." + web}},
		{"2.0.0.10.IN-ADDR.ARPA.", dns.TypePTR, []string{"web-c.api.default.svc.cluster.local.", "web-c." + web}},
		{"9.3.0.10.in-addr.arpa.", dns.TypePTR, []string{"10-0-3-9.v6.other.svc.cluster.local."}},
		{"1.2.0.10.in-addr.arpa.", dns.TypePTR, []string{"eager-a.eager.default.svc.cluster.local."}}, // published not ready
		{v6, dns.TypePTR, []string{"v6-a.v6.other.svc.cluster.local."}},
		{strings.ToUpper(v6), dns.TypePTR, []string{"v6-a.v6.other.svc.cluster.local."}},
		{"3.0.0.10.in-addr.arpa.", dns.TypePTR, nil}, // not ready
		{"1.1.0.10.in-addr.arpa.", dns.TypePTR, nil}, // not ready
		{"1.0.0.10.in-addr.arpa.", dns.TypeA, nil},
		{"1.0.0.10.in-addr.arpa.", dns.TypeANY, nil},
		{"0.0.10.in-addr.arpa.", dns.TypePTR, nil},
		{"01.0.0.10.in-addr.arpa.", dns.TypePTR, nil},
		{"x.1.0.0.10.in-addr.arpa.", dns.TypePTR, nil},
		{"2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", dns.TypePTR, nil},
		{"0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", dns.TypePTR, nil},
		{"1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.dfip6.arpa.", dns.TypePTR, nil},
		{"1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.g.ip6.arpa.", dns.TypePTR, nil},
	}
	check := func(when string) {
		t.Helper()
		for _, tt := range tests {
			ans := tbl.Lookup(tt.name, tt.qtype)
			var want []string
			for _, target := range tt.want {
				want = append(want, strings.ToLower(tt.name)+"\t5\tIN\tPTR\t"+target)
			}
			switch got := rrStrings(ans.Answer); {
			case tt.want == nil && !ans.Forward:
				t.Errorf("%s: %s %s: %s %q, want it forwarded", when, tt.name, dns.TypeToString[tt.qtype], describe(ans), got)
			case tt.want != nil && (ans.Rcode != dns.RcodeSuccess || !ans.Authoritative || !slices.Equal(got, want)):
				t.Errorf("%s: %s: %s %q, want %q", when, tt.name, describe(ans), got, want)
			}
		}
	}
	check("filled")

	// web loses 10.0.0.1 and keeps 10.0.0.2; v6 goes.
	web2 := eps("default", "web", subset(ready(at("web-c", "10.0.0.2"))))
	tbl.apply([]change{{key: "web.default", entry: buildEntry(tbl.zone, svc("default", "web"), web2)}, {key: "v6.other"}})
	tests = tests[:2]
	tests[0].want = nil
	check("changed")
	if n := tbl.Lookup("9.3.0.10.in-addr.arpa.", dns.TypePTR); !n.Forward {
		t.Errorf("a deleted service's address: %s", describe(n))
	}
	tbl.apply([]change{{key: "api.default"}, {key: "web.default"}, {key: "eager.default"}})
	tbl.reverse.Range(func(k, v any) bool {
		t.Errorf("the reverse index keeps %v: %v", k, v)
		return true
	})
}

// TestTableSerial: the SOA's serial is the time of the last change to the
// records, in the apex's answer and in negative ones, on the fast path
// and the general one alike; time passing changes nothing by itself.
func TestTableSerial(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Unix(1000, 0))
	tbl, err := makeTable("cluster.local", clk)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, tbl, svc("default", "web"), manyEndpoints("default", "web", 1, 1))
	fast, general := NewHandler(tbl, nil, nil), NewHandler(tbl, nil, nil)
	general.general = true
	serials := func() []uint32 {
		t.Helper()
		var out []uint32
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"cluster.local.", dns.TypeSOA}, {"nothing.default.svc.cluster.local.", dns.TypeA}} {
			for _, h := range []*Handler{fast, general} {
				r := new(dns.Msg)
				r.SetQuestion(q.name, q.qtype)
				m := serve(t, h, r, true)
				soas := append(m.Answer, m.Ns...)
				if len(soas) != 1 {
					t.Fatalf("%s: %v", q.name, m)
				}
				out = append(out, soas[0].(*dns.SOA).Serial)
			}
		}
		return out
	}
	if got := serials(); !slices.Equal(got, []uint32{1000, 1000, 1000, 1000}) {
		t.Errorf("serials at first %v, want 1000", got)
	}
	clk.SetTime(time.Unix(2000, 0))
	if got := serials(); !slices.Equal(got, []uint32{1000, 1000, 1000, 1000}) {
		t.Errorf("serials with nothing changed %v, want 1000", got)
	}
	tbl.Set("default", "web", svc("default", "web"), manyEndpoints("default", "web", 2, 1))
	if got := serials(); !slices.Equal(got, []uint32{2000, 2000, 2000, 2000}) {
		t.Errorf("serials after a change %v, want 2000", got)
	}
	clk.SetTime(time.Unix(3000, 0))
	tbl.SetNamespaces([]string{"quiet"})
	if got := serials(); !slices.Equal(got, []uint32{3000, 3000, 3000, 3000}) {
		t.Errorf("serials after a new namespace %v, want 3000", got)
	}
}

// TestLookupChainTooLong: a chain of ExternalName services longer than
// maxChain is answered with its first maxChain CNAMEs, not followed on.
func TestLookupChainTooLong(t *testing.T) {
	tbl := newTable(t)
	var objs []any
	for i := range maxChain + 2 {
		objs = append(objs, svc("default", fmt.Sprintf("c%d", i), externalName(fmt.Sprintf("c%d.default.svc.cluster.local", i+1))))
	}
	objs = append(objs, svc("default", fmt.Sprintf("c%d", maxChain+2)), manyEndpoints("default", fmt.Sprintf("c%d", maxChain+2), 1, 1))
	fill(t, tbl, objs...)
	ans := tbl.Lookup("c0.default.svc.cluster.local.", dns.TypeA)
	if ans.Rcode != dns.RcodeSuccess || len(ans.Answer) != maxChain || ans.Chase != "" {
		t.Fatalf("answer %s with %d records, want the first %d CNAMEs", describe(ans), len(ans.Answer), maxChain)
	}
	for _, rr := range ans.Answer {
		if rr.Header().Rrtype != dns.TypeCNAME {
			t.Errorf("not a CNAME: %v", rr)
		}
	}
	// Two links fewer, and the chain reaches the address.
	ans = tbl.Lookup("c2.default.svc.cluster.local.", dns.TypeA)
	if got := rrStrings(ans.Answer); len(got) != maxChain+1 || !strings.HasSuffix(got[maxChain], "\tA\t10.0.0.1") {
		t.Errorf("c2: %q", got)
	}
}

// TestLookupClusterIP: a service with a virtual IP is answered with it,
// ready endpoints or not, as CoreDNS answers; SRV records name the
// service with its ports; the address's PTR names the service; a
// headless service beside it still answers its endpoints.
func TestLookupClusterIP(t *testing.T) {
	tbl := newTable(t)
	vip := func(ips ...string) func(*api.Service) {
		return func(s *api.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = ips[0], ips
			s.Spec.Ports = []api.ServicePort{{Name: "http", Port: 80, Protocol: api.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: api.ProtocolUDP}}
		}
	}
	headless := func(s *api.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = api.ClusterIPNone, []string{api.ClusterIPNone}
	}
	fill(t, tbl,
		svc("default", "web", vip("10.43.0.10", "fd00:43::a")),
		eps("default", "web", subset(ready(at("web-a", "10.42.0.5")), ports(api.EndpointPort{Name: "http", Port: 8080}))),
		svc("default", "idle", vip("10.43.0.11")),
		svc("default", "db", headless),
		eps("default", "db", subset(ready(at("db-0", "10.42.0.7")))),
	)
	const web = "web.default.svc.cluster.local."
	for _, tt := range []struct {
		name  string
		qtype uint16
		want  []string
		extra []string
	}{
		{web, dns.TypeA, []string{web + "\t5\tIN\tA\t10.43.0.10"}, nil},
		{web, dns.TypeAAAA, []string{web + "\t5\tIN\tAAAA\tfd00:43::a"}, nil},
		{"idle.default.svc.cluster.local.", dns.TypeA, []string{"idle.default.svc.cluster.local.\t5\tIN\tA\t10.43.0.11"}, nil},
		{"_http._tcp." + web, dns.TypeSRV, []string{"_http._tcp." + web + "\t5\tIN\tSRV\t0 100 80 " + web},
			[]string{web + "\t5\tIN\tA\t10.43.0.10", web + "\t5\tIN\tAAAA\tfd00:43::a"}},
		{web, dns.TypeSRV, []string{web + "\t5\tIN\tSRV\t0 50 53 " + web, web + "\t5\tIN\tSRV\t0 50 80 " + web},
			[]string{web + "\t5\tIN\tA\t10.43.0.10", web + "\t5\tIN\tAAAA\tfd00:43::a"}},
		{"db.default.svc.cluster.local.", dns.TypeA, []string{"db.default.svc.cluster.local.\t5\tIN\tA\t10.42.0.7"}, nil},
		{"10.0.43.10.in-addr.arpa.", dns.TypePTR, []string{"10.0.43.10.in-addr.arpa.\t5\tIN\tPTR\t" + web}, nil},
	} {
		ans := tbl.Lookup(tt.name, tt.qtype)
		if got := rrStrings(ans.Answer); ans.Rcode != dns.RcodeSuccess || !slices.Equal(got, tt.want) {
			t.Errorf("%s %s: %s %q, want %q", tt.name, dns.TypeToString[tt.qtype], describe(ans), got, tt.want)
		}
		if got := rrStrings(ans.Extra); !slices.Equal(got, tt.extra) {
			t.Errorf("%s %s extra: %q, want %q", tt.name, dns.TypeToString[tt.qtype], got, tt.extra)
		}
	}
	if ans := tbl.Lookup("web-a."+web, dns.TypeA); ans.Rcode != dns.RcodeNameError {
		t.Errorf("an endpoint's name under a service with a virtual IP: %s", describe(ans))
	}
}

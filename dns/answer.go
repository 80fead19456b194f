package dns

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Answer is what the table says about one question. Its sections are
// shared with the table: callers must not change them or the records in
// them, nor append to them.
type Answer struct {
	Rcode  int
	Answer []dns.RR
	Ns     []dns.RR
	Extra  []dns.RR
	// Authoritative: the name is in the zone, and the table answered.
	Authoritative bool
	// Forward: the name is outside the zone; ask the upstream.
	Forward bool
	// Chase: the answer is a chain of CNAMEs (ExternalName services)
	// that leaves the zone for this name; a server that recurses asks
	// the upstream for it, with the question's type, and appends what it
	// answers.
	Chase string

	// packed is the sections in wire form, when the table holds them so
	// (see wire.go); soa says the sections are the zone's SOA alone, in
	// the answer (1) or the authority section (2).
	packed *wire
	soa    uint8
	// zoneSOA is the SOA the answer holds, if soa is set: its wire form
	// matches its records.
	zoneSOA *zoneSOA
	// target is the CNAME's target when the name is an ExternalName
	// service's, before resolve follows it.
	target string
}

// maxChain bounds the CNAMEs of one answer, as CoreDNS's kubernetes
// plugin does: ExternalName services may name each other.
const maxChain = 8

// Lookup answers a question (name and type, class IN) from the table: the
// pure core of the server, a function of the table's contents and the
// question alone. Names are compared without regard to case.
func (t *Table) Lookup(qname string, qtype uint16) Answer {
	name := strings.ToLower(qname)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return t.resolve(name, qtype)
}

// resolve is Lookup for a name already in lower case and fully qualified.
// A CNAME is followed as a recursive server follows it for the resolvers
// that ask it (Go's, for one, does not follow CNAMEs itself): the chain,
// then the records of the type asked for at its end, if that is in the
// zone; else Chase names where it leaves. A question for the CNAME itself,
// or for ANY, gets the CNAME alone.
func (t *Table) resolve(name string, qtype uint16) Answer {
	a := t.lookup(name, qtype)
	if a.target == "" || qtype == dns.TypeCNAME || qtype == dns.TypeANY {
		return a
	}
	chain, target := a.Answer, a.target
	for {
		if target != t.zone && !strings.HasSuffix(target, t.dotZone) {
			a.Answer, a.Chase = chain, target
			if len(chain) > 1 {
				a.packed = nil
			}
			return a
		}
		next := t.lookup(target, qtype)
		if next.target == "" {
			// The end of the chain: its answer, positive or negative,
			// after the CNAMEs.
			next.Answer = slices.Concat(chain, next.Answer)
			next.packed, next.soa, next.zoneSOA = nil, 0, nil
			return next
		}
		if len(chain) == maxChain || slices.ContainsFunc(chain, func(rr dns.RR) bool { return rr.Header().Name == target }) {
			break // a chain too long, or a loop
		}
		chain, target = slices.Concat(chain, next.Answer), next.target
	}
	// A loop, or a chain too long to follow: the CNAMEs so far.
	return Answer{Answer: chain, Authoritative: true}
}

// lookup answers for one name, a CNAME not followed.
func (t *Table) lookup(name string, qtype uint16) Answer {
	if !t.Synced() {
		return Answer{Rcode: dns.RcodeServerFailure}
	}
	if name == t.zone {
		return t.apex(qtype)
	}
	if !strings.HasSuffix(name, t.dotZone) {
		if qtype == dns.TypePTR {
			if a, ok := t.ptr(name); ok {
				return a
			}
		}
		return Answer{Forward: true}
	}
	rel := name[:len(name)-len(t.dotZone)]
	switch rel {
	case "dns-version":
		a := t.rrset(qtype, dns.TypeTXT, t.version)
		if qtype == dns.TypeTXT {
			a.packed = t.versionWire
		}
		return a
	case "svc", "pod":
		return t.nodata()
	}
	if rest, ok := strings.CutSuffix(rel, ".pod"); ok {
		return t.pod(name, rest, qtype)
	}
	rest, ok := strings.CutSuffix(rel, ".svc")
	if !ok {
		return t.nxdomain()
	}
	// rest is [<prefix>.]<svc>.<ns>.
	dot := strings.LastIndexByte(rest, '.')
	if dot < 0 {
		if t.hasNamespace(rest) {
			return t.nodata()
		}
		return t.nxdomain()
	}
	prefix, key := "", rest
	if i := strings.LastIndexByte(rest[:dot], '.'); i >= 0 {
		prefix, key = rest[:i], rest[i+1:]
	}
	e := t.get(key)
	if e == nil {
		return t.nxdomain()
	}
	switch {
	case prefix == "":
		if e.cname != nil {
			// An ExternalName service: the CNAME answers every type.
			return Answer{Answer: e.cname, Authoritative: true, packed: e.cnameWire, target: e.cname[0].(*dns.CNAME).Target}
		}
		if srv, ok := e.srv[""]; ok && qtype == dns.TypeSRV {
			return srvAnswer(srv, qtype)
		}
		return t.addresses(qtype, e.addrs)
	case strings.IndexByte(prefix, '.') < 0:
		if prefix[0] == '_' {
			if _, ok := e.protos[prefix]; ok {
				return t.nodata()
			}
			return t.nxdomain()
		}
		if set, ok := e.hosts[prefix]; ok {
			return t.addresses(qtype, set)
		}
		return t.nxdomain()
	case strings.Count(prefix, ".") == 1:
		srv, ok := e.srv[prefix]
		if !ok {
			return t.nxdomain()
		}
		if qtype != dns.TypeSRV && qtype != dns.TypeANY {
			return t.nodata()
		}
		return srvAnswer(srv, qtype)
	}
	return t.nxdomain()
}

// srvAnswer answers SRV or ANY for a name that holds SRV records.
func srvAnswer(srv srvRecords, qtype uint16) Answer {
	a := Answer{Answer: srv.answer, Extra: srv.extra, Authoritative: true}
	if qtype == dns.TypeSRV {
		a.packed = srv.wire
	}
	return a
}

// pod answers for <dashed-ip>.<ns>.pod.<zone> (rest is <dashed-ip>.<ns>)
// as CoreDNS's "pods insecure" mode, kubeadm's default, does: the address
// the name spells, in a namespace that exists, whether or not a pod has
// it. The namespace's own name, <ns>.pod.<zone>, is NODATA.
func (t *Table) pod(name, rest string, qtype uint16) Answer {
	dot := strings.LastIndexByte(rest, '.')
	if !t.hasNamespace(rest[dot+1:]) {
		return t.nxdomain()
	}
	if dot < 0 {
		return t.nodata()
	}
	ip, ok := dashedIP(rest[:dot])
	if !ok {
		return t.nxdomain()
	}
	var rr dns.RR
	switch {
	case ip.Is4() && (qtype == dns.TypeA || qtype == dns.TypeANY):
		rr = &dns.A{Hdr: header(name, dns.TypeA), A: ip.AsSlice()}
	case ip.Is6() && (qtype == dns.TypeAAAA || qtype == dns.TypeANY):
		rr = &dns.AAAA{Hdr: header(name, dns.TypeAAAA), AAAA: ip.AsSlice()}
	default:
		return t.nodata()
	}
	return Answer{Answer: []dns.RR{rr}, Authoritative: true}
}

// ptr answers PTR for the reverse name of an endpoint's address: the
// endpoint's names under every service that publishes it, as CoreDNS
// answers. It reports false for any other name, which goes upstream, as
// CoreDNS's kubernetes plugin falls through for in-addr.arpa and
// ip6.arpa.
func (t *Table) ptr(name string) (Answer, bool) {
	ip, ok := reverseAddr(name)
	if !ok {
		return Answer{}, false
	}
	v, ok := t.reverse.Load(ip)
	if !ok {
		return Answer{}, false
	}
	var targets []string
	for _, key := range v.([]string) {
		if e := t.get(key); e != nil {
			targets = append(targets, e.ptrs[ip]...)
		}
	}
	if len(targets) == 0 {
		return Answer{}, false // the service changed under us: as if it had
	}
	slices.Sort(targets)
	rrs := make([]dns.RR, 0, len(targets))
	for _, target := range slices.Compact(targets) {
		rrs = append(rrs, &dns.PTR{Hdr: header(name, dns.TypePTR), Ptr: target})
	}
	return Answer{Answer: rrs, Authoritative: true}, true
}

// reverseAddr reads the address of a reverse name: 4.3.2.1.in-addr.arpa.
// for 1.2.3.4, or the 32 nibbles of an IPv6 address under ip6.arpa.
func reverseAddr(name string) (netip.Addr, bool) {
	if rest, ok := strings.CutSuffix(name, ".in-addr.arpa."); ok {
		labels := strings.Split(rest, ".")
		if len(labels) != 4 {
			return netip.Addr{}, false
		}
		slices.Reverse(labels)
		ip, err := netip.ParseAddr(strings.Join(labels, "."))
		return ip, err == nil && ip.Is4()
	}
	rest, ok := strings.CutSuffix(name, ".ip6.arpa.")
	if !ok || len(rest) != 32*2-1 {
		return netip.Addr{}, false
	}
	var b [16]byte
	for i := range 32 { // nibble i of the address, from the most significant: the last label first
		at := len(rest) - 1 - 2*i
		if at > 0 && rest[at-1] != '.' {
			return netip.Addr{}, false
		}
		c := rest[at]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		default:
			return netip.Addr{}, false
		}
		b[i/2] |= v << (4 * (1 - i%2))
	}
	return netip.AddrFrom16(b), true
}

// apex answers for the zone's own name: its SOA.
func (t *Table) apex(qtype uint16) Answer {
	z := t.soa.Load()
	a := t.rrset(qtype, dns.TypeSOA, z.rrs)
	if qtype == dns.TypeSOA {
		a.soa, a.zoneSOA = 1, z
	}
	return a
}

// rrset answers for a name that holds records of one type.
func (t *Table) rrset(qtype, has uint16, rrs []dns.RR) Answer {
	if qtype == has || qtype == dns.TypeANY {
		return Answer{Answer: rrs, Authoritative: true}
	}
	return t.nodata()
}

// addresses answers for a name that holds A and AAAA records.
func (t *Table) addresses(qtype uint16, s rrset) Answer {
	var rrs []dns.RR
	var packed *wire
	switch qtype {
	case dns.TypeA:
		rrs, packed = s.a, s.aWire
	case dns.TypeAAAA:
		rrs, packed = s.aaaa, s.aaaaWire
	case dns.TypeANY:
		rrs = slices.Clip(s.all())
	}
	if len(rrs) == 0 {
		return t.nodata()
	}
	return Answer{Answer: rrs, Authoritative: true, packed: packed}
}

// nodata: the name exists, but not with the type asked for.
func (t *Table) nodata() Answer {
	z := t.soa.Load()
	return Answer{Rcode: dns.RcodeSuccess, Ns: z.rrs, Authoritative: true, soa: 2, zoneSOA: z}
}

// nxdomain: the name does not exist in the zone.
func (t *Table) nxdomain() Answer {
	z := t.soa.Load()
	return Answer{Rcode: dns.RcodeNameError, Ns: z.rrs, Authoritative: true, soa: 2, zoneSOA: z}
}

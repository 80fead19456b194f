package dns

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/berth-dev/berth/api"
)

// entry holds every record of one service. It is built whole from the
// service and its Endpoints and never changed once published, so readers
// share its slices; they must not append to them or change their records.
type entry struct {
	namespace string
	// records counts the resource records the entry holds.
	records int

	cname     []dns.RR // an ExternalName service
	cnameWire *wire
	addrs     rrset // <svc>.<ns>.svc.<zone>
	// hosts are the endpoints' names: <hostname>.<svc>.<ns>.svc.<zone>.
	hosts map[string]rrset
	// srv maps "_<port>._<proto>" to its records, and "" to those of the
	// service's own name: every port.
	srv map[string]srvRecords
	// protos holds the "_<proto>" labels of srv, names that exist only
	// because a name below them does (empty non-terminals).
	protos map[string]struct{}
	// ptrs maps each address of the endpoints to their names, the targets
	// of its PTR records.
	ptrs map[netip.Addr][]string
}

// rrset is the address records of one name, and the same packed.
type rrset struct {
	a, aaaa         []dns.RR
	aWire, aaaaWire *wire
}

func (s rrset) all() []dns.RR {
	if len(s.aaaa) == 0 {
		return s.a
	}
	if len(s.a) == 0 {
		return s.aaaa
	}
	return slices.Concat(s.a, s.aaaa)
}

// srvRecords is the answer to one SRV name and its additional section: the
// address records of the targets; and the same packed.
type srvRecords struct {
	answer, extra []dns.RR
	wire          *wire
}

// buildEntry computes the records of a service (SPEC §6) from the service
// and its Endpoints. A service with a virtual IP is answered with it,
// as CoreDNS does; a headless one with its ready endpoints. It returns
// nil when the service has no name to answer for: headless with no ready
// endpoint (its name is then NXDOMAIN).
func buildEntry(zone string, svc *api.Service, ep *api.Endpoints) *entry {
	if svc == nil {
		return nil
	}
	name := serviceKey(svc.Namespace, svc.Name) + ".svc." + zone
	e := &entry{namespace: strings.ToLower(svc.Namespace)}
	if svc.Spec.Type == api.ServiceTypeExternalName {
		target := strings.ToLower(dns.Fqdn(svc.Spec.ExternalName))
		if _, ok := dns.IsDomainName(target); !ok || svc.Spec.ExternalName == "" {
			return nil
		}
		e.cname = []dns.RR{&dns.CNAME{Hdr: header(name, dns.TypeCNAME), Target: target}}
		e.cnameWire = packWire(name, dns.TypeA, e.cname, nil, nil)
		e.records = 1
		return e
	}
	if ips := api.ServiceClusterIPs(svc); len(ips) > 0 {
		return clusterIPEntry(e, name, svc, ips)
	}
	if ep == nil {
		return nil
	}

	// Gather the ready endpoints: their IPs by hostname, and the ports.
	type srvTarget struct {
		host string
		port uint16
	}
	hostIPs := map[string][]netip.Addr{}
	var serviceIPs []netip.Addr
	srvTargets := map[string][]srvTarget{}
	for _, ss := range ep.Subsets {
		addrs := ss.Addresses
		if svc.Spec.PublishNotReadyAddresses {
			addrs = slices.Concat(ss.Addresses, ss.NotReadyAddresses)
		}
		for _, a := range addrs {
			ip, err := netip.ParseAddr(a.IP)
			if err != nil {
				continue
			}
			ip = ip.Unmap()
			host := hostLabel(a, ip)
			serviceIPs = append(serviceIPs, ip)
			hostIPs[host] = append(hostIPs[host], ip)
			for _, p := range ss.Ports {
				if p.Port <= 0 || p.Port > 65535 {
					continue
				}
				// The service's own name has every port, as CoreDNS
				// answers SRV for a headless service's name.
				srvTargets[""] = append(srvTargets[""], srvTarget{host: host, port: uint16(p.Port)})
				if p.Name == "" {
					continue
				}
				proto := strings.ToLower(string(cmp.Or(p.Protocol, api.ProtocolTCP)))
				key := "_" + strings.ToLower(p.Name) + "._" + proto
				srvTargets[key] = append(srvTargets[key], srvTarget{host: host, port: uint16(p.Port)})
			}
		}
	}
	if len(serviceIPs) == 0 {
		return nil
	}

	e.addrs = addressRecords(name, serviceIPs)
	e.records = len(e.addrs.a) + len(e.addrs.aaaa)
	e.hosts = make(map[string]rrset, len(hostIPs))
	e.ptrs = make(map[netip.Addr][]string, len(serviceIPs))
	for host, ips := range hostIPs {
		owner := host + "." + name
		set := addressRecords(owner, ips)
		e.hosts[host] = set
		e.records += len(set.a) + len(set.aaaa)
		for _, ip := range ips {
			if targets := e.ptrs[ip]; len(targets) == 0 || targets[len(targets)-1] != owner {
				e.ptrs[ip] = append(targets, owner)
			}
		}
	}
	for ip, targets := range e.ptrs {
		slices.Sort(targets)
		e.ptrs[ip] = slices.Clip(targets)
	}
	if len(srvTargets) > 0 {
		e.srv = make(map[string]srvRecords, len(srvTargets))
		e.protos = map[string]struct{}{}
	}
	for key, targets := range srvTargets {
		slices.SortFunc(targets, func(a, b srvTarget) int {
			return cmp.Or(strings.Compare(a.host, b.host), cmp.Compare(a.port, b.port))
		})
		targets = slices.Compact(targets)
		owner := name
		if key != "" {
			owner = key + "." + name
			e.protos[key[strings.IndexByte(key, '.')+1:]] = struct{}{}
		}
		weight := uint16(max(1, 100/len(targets)))
		var answer, extra []dns.RR
		for i, t := range targets {
			answer = append(answer, &dns.SRV{
				Hdr: header(owner, dns.TypeSRV), Priority: 0, Weight: weight, Port: t.port,
				Target: t.host + "." + name,
			})
			if i == 0 || targets[i-1].host != t.host {
				extra = append(extra, e.hosts[t.host].all()...)
			}
		}
		e.srv[key] = srvRecords{
			answer: slices.Clip(answer), extra: slices.Clip(extra),
			wire: packWire(owner, dns.TypeSRV, answer, nil, extra),
		}
		e.records += len(answer)
	}
	return e
}

// clusterIPEntry is the records of a service with a virtual IP, as
// CoreDNS answers them: the name's address is the clusterIP whether or
// not an endpoint is ready; SRV records point at the name with the
// service's ports; the address's PTR names the service. Endpoints have
// no names of their own under it.
func clusterIPEntry(e *entry, name string, svc *api.Service, vips []string) *entry {
	var ips []netip.Addr
	for _, v := range vips {
		if ip, err := netip.ParseAddr(v); err == nil {
			ips = append(ips, ip.Unmap())
		}
	}
	if len(ips) == 0 {
		return nil
	}
	e.addrs = addressRecords(name, ips)
	e.records = len(e.addrs.a) + len(e.addrs.aaaa)
	e.ptrs = make(map[netip.Addr][]string, len(ips))
	for _, ip := range ips {
		e.ptrs[ip] = []string{name}
	}
	srv := map[string][]uint16{}
	for _, p := range svc.Spec.Ports {
		if p.Port <= 0 || p.Port > 65535 {
			continue
		}
		srv[""] = append(srv[""], uint16(p.Port))
		if p.Name == "" {
			continue
		}
		key := "_" + strings.ToLower(p.Name) + "._" + strings.ToLower(string(cmp.Or(p.Protocol, api.ProtocolTCP)))
		srv[key] = append(srv[key], uint16(p.Port))
	}
	if len(srv) > 0 {
		e.srv = make(map[string]srvRecords, len(srv))
		e.protos = map[string]struct{}{}
	}
	extra := e.addrs.all()
	for key, ports := range srv {
		slices.Sort(ports)
		ports = slices.Compact(ports)
		owner := name
		if key != "" {
			owner = key + "." + name
			e.protos[key[strings.IndexByte(key, '.')+1:]] = struct{}{}
		}
		weight := uint16(max(1, 100/len(ports)))
		answer := make([]dns.RR, 0, len(ports))
		for _, port := range ports {
			answer = append(answer, &dns.SRV{Hdr: header(owner, dns.TypeSRV), Weight: weight, Port: port, Target: name})
		}
		e.srv[key] = srvRecords{answer: answer, extra: extra, wire: packWire(owner, dns.TypeSRV, answer, nil, extra)}
		e.records += len(answer)
	}
	return e
}

// hostLabel is the name of an endpoint under its service: its hostname
// (berth's endpoints controller sets spec.hostname, else the pod name when
// it is a DNS label), the name of the pod it points at, or, for an address
// with neither, the IP with dashes (10-0-0-1), as CoreDNS names such
// endpoints: a pod named web.v1 is answered by its IP.
func hostLabel(a api.EndpointAddress, ip netip.Addr) string {
	if h := strings.ToLower(a.Hostname); isLabel(h) {
		return h
	}
	if a.TargetRef != nil && a.TargetRef.Kind == "Pod" {
		if h := strings.ToLower(a.TargetRef.Name); isLabel(h) {
			return h
		}
	}
	return strings.NewReplacer(".", "-", ":", "-").Replace(ip.String())
}

// dashedIP reads an address written with dashes, as a pod's DNS name
// spells it: 10-0-0-1 for 10.0.0.1, fd00--1 for fd00::1. As CoreDNS reads
// them, three dashes and no two together are IPv4, anything else IPv6;
// an IPv4-mapped IPv6 address is its IPv4 one.
func dashedIP(label string) (netip.Addr, bool) {
	sep := ":"
	if strings.Count(label, "-") == 3 && !strings.Contains(label, "--") {
		sep = "."
	}
	ip, err := netip.ParseAddr(strings.ReplaceAll(label, "-", sep))
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// isLabel reports whether s is a DNS-1123 label, the only names berth
// publishes endpoints under.
func isLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// addressRecords makes the A and AAAA records of a name, one per distinct
// IP, sorted.
func addressRecords(owner string, ips []netip.Addr) rrset {
	ips = slices.Clone(ips)
	slices.SortFunc(ips, func(a, b netip.Addr) int { return a.Compare(b) })
	ips = slices.Compact(ips)
	var s rrset
	for _, ip := range ips {
		if ip.Is4() {
			s.a = append(s.a, &dns.A{Hdr: header(owner, dns.TypeA), A: ip.AsSlice()})
		} else {
			s.aaaa = append(s.aaaa, &dns.AAAA{Hdr: header(owner, dns.TypeAAAA), AAAA: ip.AsSlice()})
		}
	}
	s.a, s.aaaa = slices.Clip(s.a), slices.Clip(s.aaaa)
	if len(s.a) > 0 {
		s.aWire = packWire(owner, dns.TypeA, s.a, nil, nil)
	}
	if len(s.aaaa) > 0 {
		s.aaaaWire = packWire(owner, dns.TypeAAAA, s.aaaa, nil, nil)
	}
	return s
}

func header(owner string, rrtype uint16) dns.RR_Header {
	return dns.RR_Header{Name: owner, Rrtype: rrtype, Class: dns.ClassINET, Ttl: TTL}
}

package proxy

import (
	"cmp"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/api"
)

// Input is what the proxy's rules are made from.
type Input struct {
	// Family is the address family the rules are for, IPv4 when empty:
	// a node serves each family from a table of its own, as kube-proxy
	// runs a proxier per family.
	Family corev1.IPFamily
	// NodeName is this node: traffic policy Local keeps to the endpoints
	// whose nodeName it is.
	NodeName string
	Services []*api.Service
	Slices   []*api.EndpointSlice
	// Pods, Namespaces and Policies make the NetworkPolicy rules: the
	// policies hold for the pods of NodeName and select their peers
	// among all pods.
	Pods       []*api.Pod
	Namespaces []*api.Namespace
	Policies   []*api.NetworkPolicy
}

// Proto is a transport protocol number, as the IP header carries it.
type Proto uint8

// Protocols the proxy serves.
const (
	ProtoTCP  Proto = 6
	ProtoUDP  Proto = 17
	ProtoSCTP Proto = 132
)

func protoOf(p api.Protocol) Proto {
	switch p {
	case api.ProtocolUDP:
		return ProtoUDP
	case api.ProtocolSCTP:
		return ProtoSCTP
	}
	return ProtoTCP
}

// VIP is an address, protocol and port the proxy answers on.
type VIP struct {
	Addr  netip.Addr
	Proto Proto
	Port  uint16
}

// NodePort is a protocol and port the proxy answers on at every local
// address.
type NodePort struct {
	Proto Proto
	Port  uint16
}

// ServiceChain picks an endpoint for one port of a service, along one
// path (its clusterIP, or from outside).
type ServiceChain struct {
	// Endpoints are the endpoint chains it picks among, at random.
	Endpoints []string
	// Masquerade marks the connection to leave with the node's address.
	Masquerade bool
	// Affinity is the ClientIP affinity's timeout; 0 for none.
	Affinity time.Duration
}

// EndpointChain sends a connection to one endpoint.
type EndpointChain struct {
	Addr  netip.Addr
	Proto Proto
	Port  uint16
	// Affinity: the chain records the client in its affinity set, for
	// this long.
	Affinity time.Duration
}

// Ruleset is the proxy's whole state for one address family, in the
// shape of its nftables table.
type Ruleset struct {
	// Family is IPv4 or IPv6: every address below is of it.
	Family    corev1.IPFamily
	Services  map[string]ServiceChain
	Endpoints map[string]EndpointChain
	// IPs maps virtual IPs, load-balancer addresses and external IPs to
	// the service chain that serves them.
	IPs map[VIP]string
	// NodePorts maps node ports to the service chain that serves them.
	NodePorts map[NodePort]string
	// NoEndpoints are the addresses and node ports of services with no
	// endpoint to send to: the proxy rejects their connections.
	NoEndpoints          map[VIP]struct{}
	NoEndpointsNodePorts map[NodePort]struct{}

	// PolicyChains are the NetworkPolicy chains of the node's pods;
	// PolicyIngress and PolicyEgress map a pod's address to its chain
	// for connections to it and from it; PolicySets are the peers'
	// addresses the chains' rules look up.
	PolicyChains  map[string]PolicyChain
	PolicyIngress map[netip.Addr]string
	PolicyEgress  map[netip.Addr]string
	PolicySets    map[string][]AddrRange
	// Firewalls map a load-balancer address of a Service with
	// loadBalancerSourceRanges to the chain (in PolicyChains, its
	// ranges in PolicySets) that drops connections from elsewhere.
	Firewalls map[VIP]string
}

// Chain names: nftables allows 256 bytes; a hash keeps them unique and
// a readable tail says whose they are.
func chainName(prefix, key string) string {
	sum := sha256.Sum256([]byte(key))
	h := strings.ToLower(base32.StdEncoding.EncodeToString(sum[:])[:8])
	name := prefix + "-" + h + "-" + key
	return name[:min(len(name), 200)]
}

// endpoint is one ready or serving address of a service port.
type endpoint struct {
	addr        netip.Addr
	port        uint16
	node        string
	ready       bool
	serving     bool
	terminating bool
}

// Build is the proxy's pure core: the rules Services and EndpointSlices
// make on a node, as kube-proxy makes them, and the NetworkPolicy rules
// of its pods, for the addresses of one family: a dual-stack Service
// is in the Ruleset of each.
func Build(in Input) *Ruleset {
	return new(Builder).Build(in)
}

// Builder is Build with a memory of the rules each Service made: a
// Service whose object and EndpointSlices are the very ones of the last
// call (an informer hands out the same object until it changes) keeps
// its rules, so that a sync after one endpoint turned ready builds that
// Service's alone, not every Service's. Its result is Build's.
type Builder struct {
	family corev1.IPFamily
	node   string
	last   map[string]*builtService
	// made is the last Ruleset, whose sizes the next one's maps start
	// at: filling maps of ten thousand chains as they grow cost more
	// than making the one Service's rules that changed.
	made *Ruleset
}

// builtService is one Service's rules and what they were made from.
type builtService struct {
	svc    *api.Service
	slices []*api.EndpointSlice
	rules  *Ruleset
}

// newRuleset is an empty Ruleset whose maps have room for like's
// entries (none when like is nil).
func newRuleset(fam corev1.IPFamily, like *Ruleset) *Ruleset {
	if like == nil {
		like = &Ruleset{}
	}
	return &Ruleset{Family: fam,
		Services: make(map[string]ServiceChain, len(like.Services)), Endpoints: make(map[string]EndpointChain, len(like.Endpoints)),
		IPs: make(map[VIP]string, len(like.IPs)), NodePorts: make(map[NodePort]string, len(like.NodePorts)),
		NoEndpoints:          make(map[VIP]struct{}, len(like.NoEndpoints)),
		NoEndpointsNodePorts: make(map[NodePort]struct{}, len(like.NoEndpointsNodePorts)),
		PolicyChains:         make(map[string]PolicyChain, len(like.PolicyChains)),
		PolicyIngress:        make(map[netip.Addr]string, len(like.PolicyIngress)),
		PolicyEgress:         make(map[netip.Addr]string, len(like.PolicyEgress)),
		PolicySets:           make(map[string][]AddrRange, len(like.PolicySets)), Firewalls: make(map[VIP]string, len(like.Firewalls)),
	}
}

// Build is the Ruleset of in, remade only for the Services that changed
// since the last call.
func (b *Builder) Build(in Input) *Ruleset {
	fam := familyOf(in.Family)
	if b.family != fam || b.node != in.NodeName {
		b.family, b.node, b.last, b.made = fam, in.NodeName, nil, nil
	}
	rs := newRuleset(fam, b.made)
	slicesBySvc := map[string][]*api.EndpointSlice{}
	for _, s := range in.Slices {
		name := s.Labels[api.LabelServiceName]
		if name == "" || string(s.AddressType) != string(fam) {
			continue
		}
		k := s.Namespace + "/" + name
		slicesBySvc[k] = append(slicesBySvc[k], s)
	}
	next := make(map[string]*builtService, len(in.Services))
	for _, svc := range in.Services {
		k := svc.Namespace + "/" + svc.Name
		svcSlices := slicesBySvc[k]
		// In a stable order, for the comparison with the last call's.
		slices.SortFunc(svcSlices, func(a, b *api.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
		built := b.last[k]
		if built == nil || built.svc != svc || !slices.Equal(built.slices, svcSlices) {
			built = &builtService{svc: svc, slices: svcSlices, rules: newRuleset(fam, nil)}
			buildService(built.rules, in.NodeName, svc, svcSlices)
		}
		next[k] = built
		built.rules.addTo(rs)
	}
	b.last = next
	buildPolicies(rs, in)
	b.made = rs
	return rs
}

// addTo adds one Service's rules to rs.
func (part *Ruleset) addTo(rs *Ruleset) {
	maps.Copy(rs.Services, part.Services)
	maps.Copy(rs.Endpoints, part.Endpoints)
	maps.Copy(rs.IPs, part.IPs)
	maps.Copy(rs.NodePorts, part.NodePorts)
	maps.Copy(rs.NoEndpoints, part.NoEndpoints)
	maps.Copy(rs.NoEndpointsNodePorts, part.NoEndpointsNodePorts)
	maps.Copy(rs.PolicyChains, part.PolicyChains)
	maps.Copy(rs.PolicySets, part.PolicySets)
	maps.Copy(rs.Firewalls, part.Firewalls)
}

// familyOf is f, IPv4 when empty.
func familyOf(f corev1.IPFamily) corev1.IPFamily {
	if f == "" {
		return corev1.IPv4Protocol
	}
	return f
}

// parseIn is s as an address of family f; false for another family's
// (an IPv4-mapped IPv6 address is neither's) or no address.
func parseIn(f corev1.IPFamily, s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	return a, err == nil && inFamily(f, a)
}

func inFamily(f corev1.IPFamily, a netip.Addr) bool {
	if f == corev1.IPv6Protocol {
		return a.Is6() && !a.Is4In6() && a.Zone() == ""
	}
	return a.Is4()
}

func buildService(rs *Ruleset, node string, svc *api.Service, svcSlices []*api.EndpointSlice) {
	spec := &svc.Spec
	if spec.Type == api.ServiceTypeExternalName {
		return
	}
	var vips []netip.Addr
	for _, s := range api.ServiceClusterIPs(svc) {
		if a, ok := parseIn(rs.Family, s); ok {
			vips = append(vips, a)
		}
	}
	if len(vips) == 0 {
		return // headless: nothing to proxy
	}
	var external, lbAddrs []netip.Addr
	for _, s := range spec.ExternalIPs {
		if a, ok := parseIn(rs.Family, s); ok {
			external = append(external, a)
		}
	}
	if spec.Type == api.ServiceTypeLoadBalancer && spec.LoadBalancerClass == nil {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if a, ok := parseIn(rs.Family, ing.IP); ok {
				external = append(external, a)
				lbAddrs = append(lbAddrs, a)
			}
		}
	}
	firewall := firewallOf(rs, svc, lbAddrs)
	var affinity time.Duration
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = 10800 * time.Second
		if c := spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			affinity = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
		}
	}
	internalLocal := spec.InternalTrafficPolicy != nil && *spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	externalLocal := spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	for _, port := range spec.Ports {
		proto := protoOf(port.Protocol)
		id := fmt.Sprintf("%s/%s/%s/%d", svc.Namespace, svc.Name, strings.ToLower(string(cmp.Or(port.Protocol, api.ProtocolTCP))), port.Port)
		all := endpointsOf(rs.Family, svcSlices, port)
		// Endpoint chains are shared by the paths that pick them.
		chains := func(eps []endpoint) []string {
			var out []string
			for _, e := range eps {
				name := chainName("ep", fmt.Sprintf("%s/%s:%d", id, e.addr, e.port))
				rs.Endpoints[name] = EndpointChain{Addr: e.addr, Proto: proto, Port: e.port, Affinity: affinity}
				out = append(out, name)
			}
			return out
		}
		internal := usable(all, node, internalLocal)
		vipKeys := make([]VIP, 0, len(vips))
		for _, a := range vips {
			vipKeys = append(vipKeys, VIP{a, proto, uint16(port.Port)})
		}
		if len(internal) == 0 {
			for _, k := range vipKeys {
				rs.NoEndpoints[k] = struct{}{}
			}
		} else {
			name := chainName("svc", id)
			rs.Services[name] = ServiceChain{Endpoints: chains(internal), Affinity: affinity}
			for _, k := range vipKeys {
				rs.IPs[k] = name
			}
		}
		if len(external) == 0 && port.NodePort == 0 {
			continue
		}
		ext := usable(all, node, externalLocal)
		var extChain string
		if len(ext) > 0 {
			extChain = chainName("ext", id)
			// Local keeps the client's address: the endpoint is on this
			// node, so its answer comes back through it.
			rs.Services[extChain] = ServiceChain{Endpoints: chains(ext), Masquerade: !externalLocal, Affinity: affinity}
		}
		for _, a := range lbAddrs {
			if firewall != "" {
				rs.Firewalls[VIP{a, proto, uint16(port.Port)}] = firewall
			}
		}
		for _, a := range external {
			k := VIP{a, proto, uint16(port.Port)}
			if extChain == "" {
				rs.NoEndpoints[k] = struct{}{}
			} else {
				rs.IPs[k] = extChain
			}
		}
		if port.NodePort != 0 {
			k := NodePort{proto, uint16(port.NodePort)}
			if extChain == "" {
				rs.NoEndpointsNodePorts[k] = struct{}{}
			} else {
				rs.NodePorts[k] = extChain
			}
		}
	}
}

// endpointsOf lists the endpoints of slices that serve port, once each,
// sorted.
func endpointsOf(fam corev1.IPFamily, svcSlices []*api.EndpointSlice, port api.ServicePort) []endpoint {
	var out []endpoint
	for _, s := range svcSlices {
		var target int32
		for _, p := range s.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			proto := api.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if name == port.Name && proto == cmp.Or(port.Protocol, api.ProtocolTCP) && p.Port != nil {
				target = *p.Port
			}
		}
		if target <= 0 || target > 65535 {
			continue
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			a, ok := parseIn(fam, e.Addresses[0])
			if !ok {
				continue
			}
			c := e.Conditions
			ep := endpoint{addr: a, port: uint16(target),
				ready:       c.Ready == nil || *c.Ready,
				serving:     c.Serving != nil && *c.Serving || c.Serving == nil && (c.Ready == nil || *c.Ready),
				terminating: c.Terminating != nil && *c.Terminating}
			if e.NodeName != nil {
				ep.node = *e.NodeName
			}
			out = append(out, ep)
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int { return cmp.Or(a.addr.Compare(b.addr), cmp.Compare(a.port, b.port)) })
	return slices.CompactFunc(out, func(a, b endpoint) bool { return a.addr == b.addr && a.port == b.port })
}

// usable picks the endpoints traffic goes to, as kube-proxy does: the
// ready ones; if none is ready, the serving ones that are terminating;
// with local, only those on node.
func usable(all []endpoint, node string, local bool) []endpoint {
	var ready, terminating []endpoint
	for _, e := range all {
		if local && e.node != node {
			continue
		}
		switch {
		case e.ready:
			ready = append(ready, e)
		case e.serving && e.terminating:
			terminating = append(terminating, e)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return terminating
}

// firewallOf is the chain that keeps a LoadBalancer Service's addresses
// to the clients of its loadBalancerSourceRanges (or, without them, of
// its load-balancer-source-ranges annotation), as kube-proxy's firewall
// chains do; "" when it names none, and all may connect.
func firewallOf(rs *Ruleset, svc *api.Service, lbAddrs []netip.Addr) string {
	sources := api.LoadBalancerSourceRanges(svc)
	if len(sources) == 0 || len(lbAddrs) == 0 {
		return ""
	}
	var ranges []AddrRange
	for _, r := range sources {
		if p, ok := parsePrefixIn(rs.Family, strings.TrimSpace(r)); ok {
			ranges = append(ranges, prefixRange(p))
		}
	}
	key := svc.Namespace + "/" + svc.Name
	set := chainName("fw-sources", key)
	rs.PolicySets[set] = mergeRanges(ranges)
	chain := chainName("firewall", key)
	rs.PolicyChains[chain] = PolicyChain{Rules: []PolicyRule{{Set: set}}}
	return chain
}

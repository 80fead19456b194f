package proxy

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// AddrRange is the addresses from First to Last, both included, both of
// one family.
type AddrRange struct{ First, Last netip.Addr }

// PortRange is a protocol and its ports First to Last; First 0 is every
// port of the protocol.
type PortRange struct {
	Proto       Proto
	First, Last uint16
}

// PolicyRule lets a connection through when its peer's address (the
// source for ingress, the destination for egress) is in Set and it goes
// to one of Ports. An empty Set is any address, no Ports any port of any
// protocol.
type PolicyRule struct {
	Set   string
	Ports []PortRange
}

// PolicyChain is what a pod that policies isolate in one direction
// accepts: a new connection that no rule lets through is dropped.
type PolicyChain struct {
	// Egress: the chain holds for connections the pod opens, and its
	// sets hold destinations; else for those it takes in, from sources.
	Egress bool
	Rules  []PolicyRule
}

func samePolicyChain(a, b PolicyChain) bool {
	return a.Egress == b.Egress && slices.EqualFunc(a.Rules, b.Rules, func(x, y PolicyRule) bool {
		return x.Set == y.Set && slices.Equal(x.Ports, y.Ports)
	})
}

// policyPod is a pod as policies see it: its addresses, labels and
// named ports.
type policyPod struct {
	pod   *api.Pod
	addrs []netip.Addr
}

// podAddrs are a pod's addresses of family fam, nil for a pod
// NetworkPolicy does not apply to: one on the node's network, without an
// address yet, or that has finished.
func podAddrs(fam corev1.IPFamily, p *api.Pod) []netip.Addr {
	if p.Spec.HostNetwork || p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed {
		return nil
	}
	ips := []string{p.Status.PodIP}
	for _, ip := range p.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	var out []netip.Addr
	for _, s := range ips {
		if a, ok := parseIn(fam, s); ok && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// policyView indexes the pods and namespaces policies select from.
type policyView struct {
	pods []policyPod
	// nsLabels are each namespace's labels, with the
	// kubernetes.io/metadata.name label Kubernetes gives every one.
	nsLabels map[string]labels.Set
}

func selector(s *metav1.LabelSelector) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

func (v *policyView) namespaceLabels(ns string) labels.Set {
	if l, ok := v.nsLabels[ns]; ok {
		return l
	}
	return labels.Set{corev1.LabelMetadataName: ns}
}

// peers are the pods a peer selects for a policy of namespace ns, as
// Kubernetes reads podSelector and namespaceSelector, alone or together.
func (v *policyView) peers(ns string, peer networkingv1.NetworkPolicyPeer) []policyPod {
	if peer.PodSelector == nil && peer.NamespaceSelector == nil {
		return nil
	}
	podSel, nsSel := labels.Everything(), labels.Selector(nil)
	if peer.PodSelector != nil {
		podSel = selector(peer.PodSelector)
	}
	if peer.NamespaceSelector != nil {
		nsSel = selector(peer.NamespaceSelector)
	}
	var out []policyPod
	for _, p := range v.pods {
		if nsSel == nil && p.pod.Namespace != ns || nsSel != nil && !nsSel.Matches(v.namespaceLabels(p.pod.Namespace)) {
			continue
		}
		if podSel.Matches(labels.Set(p.pod.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// blockRanges are an ipBlock's addresses of family fam: its cidr less
// its excepts; none for a cidr of the other family.
func blockRanges(fam corev1.IPFamily, b *networkingv1.IPBlock) []AddrRange {
	cidr, ok := parsePrefixIn(fam, b.CIDR)
	if !ok {
		return nil
	}
	ranges := []AddrRange{prefixRange(cidr)}
	for _, e := range b.Except {
		if ex, ok := parsePrefixIn(fam, e); ok {
			ranges = subtractRange(ranges, prefixRange(ex))
		}
	}
	return ranges
}

// parsePrefixIn is s as a prefix of family f.
func parsePrefixIn(f corev1.IPFamily, s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	return p, err == nil && inFamily(f, p.Addr())
}

// prefixRange is p's first to last address, of either family.
func prefixRange(p netip.Prefix) AddrRange {
	p = p.Masked()
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	last, _ := netip.AddrFromSlice(b)
	return AddrRange{p.Addr(), last}
}

// subtractRange takes cut out of sorted, disjoint ranges.
func subtractRange(ranges []AddrRange, cut AddrRange) []AddrRange {
	var out []AddrRange
	for _, r := range ranges {
		if cut.Last.Less(r.First) || r.Last.Less(cut.First) {
			out = append(out, r)
			continue
		}
		if r.First.Less(cut.First) {
			out = append(out, AddrRange{r.First, cut.First.Prev()})
		}
		if cut.Last.Less(r.Last) {
			out = append(out, AddrRange{cut.Last.Next(), r.Last})
		}
	}
	return out
}

// mergeRanges sorts ranges and joins those that overlap or touch, as an
// nftables interval set holds them.
func mergeRanges(ranges []AddrRange) []AddrRange {
	slices.SortFunc(ranges, func(a, b AddrRange) int { return a.First.Compare(b.First) })
	var out []AddrRange
	for _, r := range ranges {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if !last.Last.Less(r.First) || r.First == last.Last.Next() {
				if last.Last.Less(r.Last) {
					last.Last = r.Last
				}
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

func addrRanges(pods []policyPod) []AddrRange {
	var out []AddrRange
	for _, p := range pods {
		for _, a := range p.addrs {
			out = append(out, AddrRange{a, a})
		}
	}
	return out
}

// namedPorts are the port numbers a pod's containers give name for
// protocol proto.
func namedPorts(p *api.Pod, name string, proto api.Protocol) []uint16 {
	var out []uint16
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == name && cmp.Or(cp.Protocol, api.ProtocolTCP) == proto && cp.ContainerPort > 0 && cp.ContainerPort <= 65535 {
				out = append(out, uint16(cp.ContainerPort))
			}
		}
	}
	return out
}

func policyProto(p *corev1.Protocol) api.Protocol {
	if p == nil {
		return api.ProtocolTCP
	}
	return api.Protocol(*p)
}

// numericPorts are a rule's ports given as numbers (or none: every
// port of the protocol), and its named ports apart.
func numericPorts(ports []networkingv1.NetworkPolicyPort) (nums []PortRange, named []networkingv1.NetworkPolicyPort) {
	for _, p := range ports {
		proto := protoOf(policyProto(p.Protocol))
		switch {
		case p.Port == nil:
			nums = append(nums, PortRange{Proto: proto})
		case p.Port.Type == intstr.String:
			named = append(named, p)
		case p.Port.IntVal >= 1 && p.Port.IntVal <= 65535:
			last := p.Port.IntVal
			if p.EndPort != nil && *p.EndPort >= last && *p.EndPort <= 65535 {
				last = *p.EndPort
			}
			nums = append(nums, PortRange{Proto: proto, First: uint16(p.Port.IntVal), Last: uint16(last)})
		}
	}
	return nums, named
}

func sortPorts(ports []PortRange) []PortRange {
	slices.SortFunc(ports, func(a, b PortRange) int {
		return cmp.Or(cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.First, b.First), cmp.Compare(a.Last, b.Last))
	})
	return slices.Compact(ports)
}

// policyTypes are the directions a policy isolates the pods it selects
// in, as Kubernetes defaults them when none is given.
func policyTypes(np *api.NetworkPolicy) (ingress, egress bool) {
	if len(np.Spec.PolicyTypes) == 0 {
		return true, len(np.Spec.Egress) > 0
	}
	for _, t := range np.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

// buildPolicies is the NetworkPolicy part of Build: for each pod of
// this node that a policy selects for a direction, a chain that lets
// through only what one of those policies allows, as Kubernetes
// specifies; pods no policy selects get none, and every connection
// passes. Peers' addresses are named sets each rule shares among the
// pods it holds for.
func buildPolicies(rs *Ruleset, in Input) {
	v := &policyView{nsLabels: map[string]labels.Set{}}
	for _, ns := range in.Namespaces {
		l := labels.Set{corev1.LabelMetadataName: ns.Name}
		for k, val := range ns.Labels {
			l[k] = val
		}
		v.nsLabels[ns.Name] = l
	}
	for _, p := range in.Pods {
		if addrs := podAddrs(rs.Family, p); len(addrs) > 0 {
			v.pods = append(v.pods, policyPod{pod: p, addrs: addrs})
		}
	}
	slices.SortFunc(v.pods, func(a, b policyPod) int {
		return cmp.Or(strings.Compare(a.pod.Namespace, b.pod.Namespace), strings.Compare(a.pod.Name, b.pod.Name))
	})
	policies := slices.Clone(in.Policies)
	slices.SortFunc(policies, func(a, b *api.NetworkPolicy) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for _, p := range v.pods {
		if p.pod.Spec.NodeName != in.NodeName {
			continue
		}
		var ing, eg *PolicyChain
		for _, np := range policies {
			if np.Namespace != p.pod.Namespace || !selector(&np.Spec.PodSelector).Matches(labels.Set(p.pod.Labels)) {
				continue
			}
			isIngress, isEgress := policyTypes(np)
			if isIngress {
				if ing == nil {
					ing = &PolicyChain{}
				}
				for i, r := range np.Spec.Ingress {
					ing.Rules = append(ing.Rules, v.ingressRules(rs, np, i, r, p.pod)...)
				}
			}
			if isEgress {
				if eg == nil {
					eg = &PolicyChain{Egress: true}
				}
				for i, r := range np.Spec.Egress {
					eg.Rules = append(eg.Rules, v.egressRules(rs, np, i, r)...)
				}
			}
		}
		key := p.pod.Namespace + "/" + p.pod.Name
		if ing != nil {
			name := chainName("pol-in", key)
			rs.PolicyChains[name] = *ing
			for _, a := range p.addrs {
				rs.PolicyIngress[a] = name
			}
		}
		if eg != nil {
			name := chainName("pol-out", key)
			rs.PolicyChains[name] = *eg
			for _, a := range p.addrs {
				rs.PolicyEgress[a] = name
			}
		}
	}
}

// peerSet names the set of the addresses a rule's peers hold, made once
// for every pod the rule holds for; "" for a rule open to any peer.
func (v *policyView) peerSet(rs *Ruleset, np *api.NetworkPolicy, key string, peers []networkingv1.NetworkPolicyPeer) string {
	if len(peers) == 0 {
		return ""
	}
	name := chainName("pol-peers", fmt.Sprintf("%s/%s/%s", np.Namespace, np.Name, key))
	if _, ok := rs.PolicySets[name]; ok {
		return name
	}
	var ranges []AddrRange
	for _, peer := range peers {
		if peer.IPBlock != nil {
			ranges = append(ranges, blockRanges(rs.Family, peer.IPBlock)...)
			continue
		}
		ranges = append(ranges, addrRanges(v.peers(np.Namespace, peer))...)
	}
	rs.PolicySets[name] = mergeRanges(ranges)
	return name
}

// ingressRules are what rule i of np lets into pod: its named ports are
// the pod's own.
func (v *policyView) ingressRules(rs *Ruleset, np *api.NetworkPolicy, i int, r networkingv1.NetworkPolicyIngressRule, pod *api.Pod) []PolicyRule {
	set := v.peerSet(rs, np, fmt.Sprintf("ingress/%d", i), r.From)
	if len(r.Ports) == 0 {
		return []PolicyRule{{Set: set}}
	}
	ports, named := numericPorts(r.Ports)
	for _, p := range named {
		proto := policyProto(p.Protocol)
		for _, n := range namedPorts(pod, p.Port.StrVal, proto) {
			ports = append(ports, PortRange{Proto: protoOf(proto), First: n, Last: n})
		}
	}
	if len(ports) == 0 {
		return nil // only named ports the pod does not have: nothing
	}
	return []PolicyRule{{Set: set, Ports: sortPorts(ports)}}
}

// egressRules are what rule i of np lets pods open. A named port is the
// destination pod's: each number it stands for on some peer pod is a
// rule of its own, to the peers that give it that name.
func (v *policyView) egressRules(rs *Ruleset, np *api.NetworkPolicy, i int, r networkingv1.NetworkPolicyEgressRule) []PolicyRule {
	key := fmt.Sprintf("egress/%d", i)
	set := v.peerSet(rs, np, key, r.To)
	if len(r.Ports) == 0 {
		return []PolicyRule{{Set: set}}
	}
	ports, named := numericPorts(r.Ports)
	var out []PolicyRule
	if len(ports) > 0 {
		out = append(out, PolicyRule{Set: set, Ports: sortPorts(ports)})
	}
	if len(named) == 0 {
		return out
	}
	// The pods a named port is looked up on: the peers (pods the
	// selectors pick, and those an ipBlock holds), or every pod.
	candidates := v.pods
	if len(r.To) > 0 {
		within := rs.PolicySets[set]
		candidates = nil
		for _, p := range v.pods {
			if slices.ContainsFunc(p.addrs, func(a netip.Addr) bool { return inRanges(within, a) }) {
				candidates = append(candidates, p)
			}
		}
	}
	for _, p := range named {
		proto := policyProto(p.Protocol)
		byPort := map[uint16][]AddrRange{}
		for _, c := range candidates {
			for _, n := range namedPorts(c.pod, p.Port.StrVal, proto) {
				byPort[n] = append(byPort[n], addrRanges([]policyPod{c})...)
			}
		}
		for _, n := range slices.Sorted(maps.Keys(byPort)) {
			name := chainName("pol-peers", fmt.Sprintf("%s/%s/%s/%s/%s/%d", np.Namespace, np.Name, key, p.Port.StrVal, proto, n))
			rs.PolicySets[name] = mergeRanges(byPort[n])
			out = append(out, PolicyRule{Set: name, Ports: []PortRange{{Proto: protoOf(proto), First: n, Last: n}}})
		}
	}
	return out
}

func inRanges(ranges []AddrRange, a netip.Addr) bool {
	for _, r := range ranges {
		if !a.Less(r.First) && !r.Last.Less(a) {
			return true
		}
	}
	return false
}

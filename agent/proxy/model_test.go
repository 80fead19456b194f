package proxy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

type ep struct {
	ip, node                    string
	ready, serving, terminating bool
}

func buildOne(svc *api.Service, eps ...ep) *Ruleset {
	name, port, proto := "http", int32(8080), api.ProtocolTCP
	es := &api.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{api.LabelServiceName: svc.Name}},
		AddressType: api.AddressTypeIPv4, Ports: []api.EndpointSlicePort{{Name: &name, Port: &port, Protocol: &proto}}}
	for _, e := range eps {
		r, s, t, n := e.ready, e.serving, e.terminating, e.node
		es.Endpoints = append(es.Endpoints, api.Endpoint{Addresses: []string{e.ip}, NodeName: &n, Conditions: api.EndpointConditions{Ready: &r, Serving: &s, Terminating: &t}})
	}
	return Build(Input{NodeName: "n1", Services: []*api.Service{svc}, Slices: []*api.EndpointSlice{es}})
}

func svcOf(typ api.ServiceType, mutate ...func(*api.Service)) *api.Service {
	svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: api.ServiceSpec{
		Type: typ, ClusterIP: "198.19.0.10", ClusterIPs: []string{"198.19.0.10"},
		Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}}
	if typ != api.ServiceTypeClusterIP {
		svc.Spec.Ports[0].NodePort = 30080
	}
	for _, m := range mutate {
		m(svc)
	}
	api.Default(svc)
	return svc
}

// addrs are the endpoint addresses a service chain picks among.
func addrs(rs *Ruleset, chain string) []string {
	var out []string
	for _, e := range rs.Services[chain].Endpoints {
		out = append(out, rs.Endpoints[e].Addr.String())
	}
	return out
}

var vip80 = VIP{netip.MustParseAddr("198.19.0.10"), ProtoTCP, 80}

func TestBuild(t *testing.T) {
	a := ep{"198.18.0.11", "n1", true, true, false}
	b := ep{"198.18.0.12", "n2", true, true, false}
	gone := ep{"198.18.0.13", "n1", false, true, true}
	notReady := ep{"198.18.0.14", "n1", false, false, false}
	local := func(s *api.Service) {
		p := corev1.ServiceInternalTrafficPolicyLocal
		s.Spec.InternalTrafficPolicy = &p
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	for _, tc := range []struct {
		name          string
		svc           *api.Service
		eps           []ep
		internal      []string // nil: no chain, rejected
		external      []string
		extMasquerade bool
	}{
		{"ready ones", svcOf(api.ServiceTypeClusterIP), []ep{a, b, gone, notReady}, []string{a.ip, b.ip}, nil, false},
		{"terminating when none is ready", svcOf(api.ServiceTypeClusterIP), []ep{gone, notReady}, []string{gone.ip}, nil, false},
		{"none", svcOf(api.ServiceTypeClusterIP), []ep{notReady}, nil, nil, false},
		{"node port", svcOf(api.ServiceTypeNodePort), []ep{a, b}, []string{a.ip, b.ip}, []string{a.ip, b.ip}, true},
		{"local policies", svcOf(api.ServiceTypeNodePort, local), []ep{a, b}, []string{a.ip}, []string{a.ip}, false},
		{"local with none here", svcOf(api.ServiceTypeLoadBalancer, local), []ep{b}, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := buildOne(tc.svc, tc.eps...)
			chain, ok := rs.IPs[vip80]
			if tc.internal == nil {
				if _, rejected := rs.NoEndpoints[vip80]; ok || !rejected {
					t.Fatalf("clusterIP: chain %q, rejected %v", chain, rejected)
				}
			} else if got := addrs(rs, chain); !ok || !slices.Equal(got, tc.internal) {
				t.Fatalf("clusterIP picks %v, want %v", got, tc.internal)
			}
			if tc.svc.Spec.Type == api.ServiceTypeClusterIP {
				if len(rs.NodePorts)+len(rs.NoEndpointsNodePorts) != 0 {
					t.Fatalf("node ports of a ClusterIP service: %v", rs.NodePorts)
				}
				return
			}
			np := NodePort{ProtoTCP, 30080}
			ext, ok := rs.NodePorts[np]
			if tc.external == nil {
				if _, rejected := rs.NoEndpointsNodePorts[np]; ok || !rejected {
					t.Fatalf("node port: chain %q, rejected %v", ext, rejected)
				}
				return
			}
			if got := addrs(rs, ext); !ok || !slices.Equal(got, tc.external) || rs.Services[ext].Masquerade != tc.extMasquerade {
				t.Fatalf("node port picks %v (masquerade %v), want %v (%v)", got, rs.Services[ext].Masquerade, tc.external, tc.extMasquerade)
			}
		})
	}
}

func TestBuildLoadBalancerAndAffinity(t *testing.T) {
	svc := svcOf(api.ServiceTypeLoadBalancer, func(s *api.Service) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.0.1"}}
		s.Spec.ExternalIPs = []string{"198.18.5.5"}
	})
	rs := buildOne(svc, ep{"198.18.0.11", "n1", true, true, false})
	for _, ip := range []string{"198.18.0.1", "198.18.5.5"} {
		if _, ok := rs.IPs[VIP{netip.MustParseAddr(ip), ProtoTCP, 80}]; !ok {
			t.Errorf("%s:80 is not served", ip)
		}
	}
	chain := rs.IPs[vip80]
	if rs.Services[chain].Affinity != 3*time.Hour || rs.Endpoints[rs.Services[chain].Endpoints[0]].Affinity != 3*time.Hour {
		t.Errorf("affinity %v, want the default 3h", rs.Services[chain].Affinity)
	}
	// Another load balancer's service is left to it; headless and
	// ExternalName ones have nothing to proxy.
	other := "example.com/lb"
	svc.Spec.LoadBalancerClass = &other
	if rs := buildOne(svc, ep{"198.18.0.11", "n1", true, true, false}); len(rs.IPs) != 2 {
		t.Errorf("a LoadBalancer of another class: %v", rs.IPs)
	}
	headless := svcOf(api.ServiceTypeClusterIP, func(s *api.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = api.ClusterIPNone, []string{api.ClusterIPNone}
	})
	if rs := buildOne(headless, ep{"198.18.0.11", "n1", true, true, false}); len(rs.IPs)+len(rs.Services) != 0 {
		t.Errorf("headless: %v", rs.IPs)
	}
}

// TestLoadBalancerSourceRanges: a LoadBalancer's addresses, and only
// they, go through a firewall chain that lets in its IPv4 source
// ranges; without ranges there is none.
func TestLoadBalancerSourceRanges(t *testing.T) {
	lb := func(ranges ...string) *api.Service {
		return svcOf(api.ServiceTypeLoadBalancer, func(s *api.Service) {
			s.Spec.LoadBalancerSourceRanges = ranges
			s.Spec.ExternalIPs = []string{"198.18.5.5"}
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.0.1"}, {IP: "198.18.0.2"}}
		})
	}
	a := ep{"198.18.0.11", "n1", true, true, false}
	rs := buildOne(lb("198.18.9.0/24", " 198.18.8.0/24", "fd00::/64"), a)
	if len(rs.Firewalls) != 2 {
		t.Fatalf("firewalls %v, want the two load-balancer addresses", rs.Firewalls)
	}
	chain := rs.Firewalls[VIP{netip.MustParseAddr("198.18.0.1"), ProtoTCP, 80}]
	fw, ok := rs.PolicyChains[chain]
	if !ok || fw.Egress || len(fw.Rules) != 1 || len(fw.Rules[0].Ports) != 0 {
		t.Fatalf("firewall chain %q: %+v", chain, fw)
	}
	if got := setRanges(rs, fw.Rules[0].Set); !slices.Equal(got, []string{"198.18.8.0-198.18.9.255"}) {
		t.Fatalf("source ranges %v", got)
	}
	if rs := buildOne(lb(), a); len(rs.Firewalls) != 0 || len(rs.PolicyChains) != 0 {
		t.Fatalf("without ranges: %v %v", rs.Firewalls, rs.PolicyChains)
	}
	// The annotation form, read when the field is empty and ignored
	// when it is not.
	annotated := func(s *api.Service, v string) *api.Service {
		s.Annotations = map[string]string{api.AnnotationLoadBalancerSourceRanges: v}
		return s
	}
	rs = buildOne(annotated(lb(), "198.18.7.0/24, 198.18.6.0/24"), a)
	if got := setRanges(rs, rs.PolicyChains[rs.Firewalls[VIP{netip.MustParseAddr("198.18.0.1"), ProtoTCP, 80}]].Rules[0].Set); !slices.Equal(got, []string{"198.18.6.0-198.18.7.255"}) {
		t.Fatalf("annotation's ranges %v", got)
	}
	rs = buildOne(annotated(lb("198.18.9.0/24"), "198.18.7.0/24"), a)
	if got := setRanges(rs, rs.PolicyChains[rs.Firewalls[VIP{netip.MustParseAddr("198.18.0.1"), ProtoTCP, 80}]].Rules[0].Set); !slices.Equal(got, []string{"198.18.9.0-198.18.9.255"}) {
		t.Fatalf("field and annotation: %v, want the field's", got)
	}
}

// TestDualStackEachFamily: a dual-stack Service (an IPv6 cluster IP,
// load-balancer address and external IP besides its IPv4 ones) with an
// IPv6 EndpointSlice beside its IPv4 one is proxied in each family's
// Ruleset on that family's addresses to that family's endpoints;
// neither holds an address of the other. Its loadBalancerSourceRanges
// and a NetworkPolicy's ipBlocks and pod addresses split the same way.
func TestDualStackEachFamily(t *testing.T) {
	svc := svcOf(api.ServiceTypeLoadBalancer, func(s *api.Service) {
		pol := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy = &pol
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		s.Spec.ClusterIPs = []string{"198.19.0.10", "fd00:43::10"}
		s.Spec.ExternalIPs = []string{"fd00:1::5", "::ffff:198.18.0.9"}
		s.Spec.LoadBalancerSourceRanges = []string{"198.18.9.0/24", "fd00:9::/64"}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.0.1"}, {IP: "fd00:1::1"}}
	})
	name, port, proto := "http", int32(8080), api.ProtocolTCP
	ready := true
	slice := func(name0 string, typ api.AddressType, addr string) *api.EndpointSlice {
		return &api.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name0, Labels: map[string]string{api.LabelServiceName: "web"}},
			AddressType: typ, Ports: []api.EndpointSlicePort{{Name: &name, Port: &port, Protocol: &proto}},
			Endpoints: []api.Endpoint{{Addresses: []string{addr}, Conditions: api.EndpointConditions{Ready: &ready}}}}
	}
	pod := policyPodOf("default", "web", "n1", "198.18.7.10", map[string]string{"app": "web"})
	pod.Status.PodIPs = []api.PodIP{{IP: "198.18.7.10"}, {IP: "fd00:7::10"}}
	np := policyOf("default", "from-block", map[string]string{"app": "web"}, func(s *networkingv1.NetworkPolicySpec) {
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "198.18.8.0/24"}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "fd00:8::/64", Except: []string{"fd00:8::/65"}}},
		}}}
	})
	in := Input{NodeName: "n1", Services: []*api.Service{svc},
		Slices: []*api.EndpointSlice{slice("web-v4", api.AddressTypeIPv4, "198.18.0.11"), slice("web-v6", api.AddressTypeIPv6, "fd00::11")},
		Pods:   []*api.Pod{pod}, Policies: []*api.NetworkPolicy{np}}
	for _, tc := range []struct {
		family                 corev1.IPFamily
		addrs, endpoints, pods []string
		vip                    string
		sources, blocks        []AddrRange
	}{
		{"", []string{"198.18.0.1", "198.19.0.10"}, []string{"198.18.0.11"}, []string{"198.18.7.10"}, "198.19.0.10",
			[]AddrRange{{netip.MustParseAddr("198.18.9.0"), netip.MustParseAddr("198.18.9.255")}},
			[]AddrRange{{netip.MustParseAddr("198.18.8.0"), netip.MustParseAddr("198.18.8.255")}}},
		{corev1.IPv6Protocol, []string{"fd00:1::1", "fd00:1::5", "fd00:43::10"}, []string{"fd00::11"}, []string{"fd00:7::10"}, "fd00:43::10",
			[]AddrRange{{netip.MustParseAddr("fd00:9::"), netip.MustParseAddr("fd00:9::ffff:ffff:ffff:ffff")}},
			[]AddrRange{{netip.MustParseAddr("fd00:8::8000:0:0:0"), netip.MustParseAddr("fd00:8::ffff:ffff:ffff:ffff")}}},
	} {
		in.Family = tc.family
		rs := Build(in)
		if want := familyOf(tc.family); rs.Family != want {
			t.Errorf("Ruleset of %q: family %s, want %s", tc.family, rs.Family, want)
		}
		var got []string
		for v := range rs.IPs {
			got = append(got, v.Addr.String())
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.addrs) {
			t.Errorf("%s: addresses %v, want %v", rs.Family, got, tc.addrs)
		}
		if got := addrs(rs, rs.IPs[VIP{netip.MustParseAddr(tc.vip), ProtoTCP, 80}]); !slices.Equal(got, tc.endpoints) {
			t.Errorf("%s: endpoints %v, want %v", rs.Family, got, tc.endpoints)
		}
		got = nil
		for a := range rs.PolicyIngress {
			got = append(got, a.String())
		}
		if !slices.Equal(got, tc.pods) {
			t.Errorf("%s: isolated pod addresses %v, want %v", rs.Family, got, tc.pods)
		}
		var sources, blocks []AddrRange
		for name, set := range rs.PolicySets {
			if strings.HasPrefix(name, "fw-sources") {
				sources = set
			} else {
				blocks = set
			}
		}
		if !slices.Equal(sources, tc.sources) || !slices.Equal(blocks, tc.blocks) {
			t.Errorf("%s: source ranges %v, ipBlocks %v; want %v, %v", rs.Family, sources, blocks, tc.sources, tc.blocks)
		}
	}
}

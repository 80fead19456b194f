package proxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

func policyPodOf(ns, name, node, ip string, lbls map[string]string, ports ...api.ContainerPort) *api.Pod {
	return &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:   api.PodSpec{NodeName: node, Containers: []api.Container{{Name: "app", Ports: ports}}},
		Status: api.PodStatus{Phase: api.PodRunning, PodIP: ip}}
}

func nsOf(name string, lbls map[string]string) *api.Namespace {
	return &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func policyOf(ns, name string, sel map[string]string, edit func(*networkingv1.NetworkPolicySpec)) *api.NetworkPolicy {
	np := &api.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}}}
	if edit != nil {
		edit(&np.Spec)
	}
	api.Default(np)
	return np
}

func portOf(p intstr.IntOrString, proto corev1.Protocol, end ...int32) networkingv1.NetworkPolicyPort {
	out := networkingv1.NetworkPolicyPort{Port: &p, Protocol: &proto}
	if len(end) > 0 {
		out.EndPort = &end[0]
	}
	return out
}

// describe renders what the policy rules of rs let through, for the
// pod at addr, in a form tests compare: "in: peers 198.18.0.2 tcp/80",
// one line a rule; "in: none" for an isolated pod no rule opens.
func describe(rs *Ruleset, addr string) string {
	a := netip.MustParseAddr(addr)
	var lines []string
	for _, dir := range []struct {
		name string
		m    map[netip.Addr]string
	}{{"in", rs.PolicyIngress}, {"out", rs.PolicyEgress}} {
		chain, ok := dir.m[a]
		if !ok {
			continue
		}
		rules := rs.PolicyChains[chain].Rules
		if len(rules) == 0 {
			lines = append(lines, dir.name+": none")
		}
		for _, r := range rules {
			peers := "any"
			if r.Set != "" {
				peers = "[" + strings.Join(setRanges(rs, r.Set), " ") + "]"
			}
			ports := "any"
			if len(r.Ports) > 0 {
				var ps []string
				for _, p := range r.Ports {
					s := map[Proto]string{ProtoTCP: "tcp", ProtoUDP: "udp", ProtoSCTP: "sctp"}[p.Proto]
					switch {
					case p.First == 0:
					case p.First == p.Last:
						s += fmt.Sprintf("/%d", p.First)
					default:
						s += fmt.Sprintf("/%d-%d", p.First, p.Last)
					}
					ps = append(ps, s)
				}
				ports = strings.Join(ps, ",")
			}
			lines = append(lines, fmt.Sprintf("%s: %s %s", dir.name, peers, ports))
		}
	}
	return strings.Join(lines, "\n")
}

func setRanges(rs *Ruleset, set string) []string {
	var out []string
	for _, r := range rs.PolicySets[set] {
		if r.First == r.Last {
			out = append(out, r.First.String())
		} else {
			out = append(out, r.First.String()+"-"+r.Last.String())
		}
	}
	return out
}

// TestBuildPolicies: which pods a policy isolates, and what it lets
// through, as Kubernetes specifies NetworkPolicy.
func TestBuildPolicies(t *testing.T) {
	web := map[string]string{"app": "web"}
	http := api.ContainerPort{Name: "http", ContainerPort: 8080}
	pods := []*api.Pod{
		policyPodOf("shop", "web", "node-1", "198.18.0.10", web, http),
		policyPodOf("shop", "db", "node-1", "198.18.0.11", map[string]string{"app": "db"}),
		policyPodOf("shop", "remote-web", "node-2", "198.18.1.10", web, api.ContainerPort{Name: "http", ContainerPort: 9090}),
		policyPodOf("front", "client", "node-2", "198.18.1.20", map[string]string{"role": "client"}),
		policyPodOf("front", "other", "node-2", "198.18.1.21", map[string]string{"role": "other"}),
		policyPodOf("back", "client", "node-2", "198.18.1.30", map[string]string{"role": "client"}),
	}
	namespaces := []*api.Namespace{nsOf("shop", nil), nsOf("front", map[string]string{"team": "frontend"}), nsOf("back", nil)}
	from := func(peers ...networkingv1.NetworkPolicyPeer) func(*networkingv1.NetworkPolicySpec) {
		return func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = append(s.Ingress, networkingv1.NetworkPolicyIngressRule{From: peers})
		}
	}
	sel := func(m map[string]string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: m} }
	tests := []struct {
		name     string
		policies []*api.NetworkPolicy
		pod      string
		want     string
	}{
		{"no policy: open", nil, "198.18.0.10", ""},
		{"a policy of another pod: open", []*api.NetworkPolicy{policyOf("shop", "db-only", map[string]string{"app": "db"}, nil)}, "198.18.0.10", ""},
		{"a policy of another namespace: open", []*api.NetworkPolicy{policyOf("front", "deny", nil, nil)}, "198.18.0.10", ""},
		{"deny all ingress", []*api.NetworkPolicy{policyOf("shop", "deny", nil, nil)}, "198.18.0.10", "in: none"},
		{"egress only leaves ingress open", []*api.NetworkPolicy{policyOf("shop", "deny-out", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		})}, "198.18.0.10", "out: none"},
		{"allow all ingress", []*api.NetworkPolicy{policyOf("shop", "all", web, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		})}, "198.18.0.10", "in: any any"},
		{"podSelector: pods of the policy's namespace", []*api.NetworkPolicy{policyOf("shop", "p", web, from(networkingv1.NetworkPolicyPeer{PodSelector: sel(nil)}))},
			"198.18.0.10", "in: [198.18.0.10-198.18.0.11 198.18.1.10] any"},
		{"namespaceSelector: every pod of the namespaces", []*api.NetworkPolicy{policyOf("shop", "p", web, from(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel(map[string]string{"team": "frontend"})}))},
			"198.18.0.10", "in: [198.18.1.20-198.18.1.21] any"},
		{"both: the pods of the namespaces", []*api.NetworkPolicy{policyOf("shop", "p", web, from(networkingv1.NetworkPolicyPeer{
			NamespaceSelector: sel(nil), PodSelector: sel(map[string]string{"role": "client"})}))},
			"198.18.0.10", "in: [198.18.1.20 198.18.1.30] any"},
		{"the namespace's name label", []*api.NetworkPolicy{policyOf("shop", "p", web, from(networkingv1.NetworkPolicyPeer{
			NamespaceSelector: sel(map[string]string{corev1.LabelMetadataName: "back"})}))},
			"198.18.0.10", "in: [198.18.1.30] any"},
		{"ipBlock with except", []*api.NetworkPolicy{policyOf("shop", "p", web, from(networkingv1.NetworkPolicyPeer{
			IPBlock: &networkingv1.IPBlock{CIDR: "198.18.0.0/16", Except: []string{"198.18.1.0/24", "198.18.3.128/25"}}}))},
			"198.18.0.10", "in: [198.18.0.0-198.18.0.255 198.18.2.0-198.18.3.127 198.18.4.0-198.18.255.255] any"},
		{"ports: numbers, ranges, protocols, named on the pod", []*api.NetworkPolicy{policyOf("shop", "p", web, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{
				portOf(intstr.FromString("http"), corev1.ProtocolTCP), portOf(intstr.FromInt32(8000), corev1.ProtocolTCP, 8100),
				portOf(intstr.FromInt32(53), corev1.ProtocolUDP), {Protocol: ptrTo(corev1.ProtocolSCTP)},
				portOf(intstr.FromString("http"), corev1.ProtocolUDP)}}}
		})}, "198.18.0.10", "in: any tcp/8000-8100,tcp/8080,udp/53,sctp"},
		{"only a named port the pod lacks: nothing", []*api.NetworkPolicy{policyOf("shop", "p", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{portOf(intstr.FromString("metrics"), corev1.ProtocolTCP)}}}
		})}, "198.18.0.10", "in: none"},
		{"two policies add up", []*api.NetworkPolicy{
			policyOf("shop", "a", web, from(networkingv1.NetworkPolicyPeer{PodSelector: sel(map[string]string{"app": "db"})})),
			policyOf("shop", "b", nil, from(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel(map[string]string{corev1.LabelMetadataName: "back"})})),
		}, "198.18.0.10", "in: [198.18.0.11] any\nin: [198.18.1.30] any"},
		{"egress with a named port: the destination's number", []*api.NetworkPolicy{policyOf("shop", "p", map[string]string{"app": "db"}, func(s *networkingv1.NetworkPolicySpec) {
			s.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: sel(web)}},
				Ports: []networkingv1.NetworkPolicyPort{portOf(intstr.FromString("http"), corev1.ProtocolTCP), portOf(intstr.FromInt32(443), corev1.ProtocolTCP)}}}
			s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		})}, "198.18.0.11", "out: [198.18.0.10 198.18.1.10] tcp/443\nout: [198.18.0.10] tcp/8080\nout: [198.18.1.10] tcp/9090"},
		{"a pod of another node: no chain", []*api.NetworkPolicy{policyOf("front", "deny", nil, nil)}, "198.18.1.20", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := Build(Input{NodeName: "node-1", Pods: pods, Namespaces: namespaces, Policies: tt.policies})
			if got := describe(rs, tt.pod); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestPoliciesSkipPodsOutOfReach: a pod on the node's network, without
// an address or finished is neither isolated nor a peer.
func TestPoliciesSkipPodsOutOfReach(t *testing.T) {
	host := policyPodOf("shop", "host", "node-1", "198.18.0.1", nil)
	host.Spec.HostNetwork = true
	done := policyPodOf("shop", "done", "node-1", "198.18.0.12", nil)
	done.Status.Phase = api.PodSucceeded
	pending := policyPodOf("shop", "pending", "node-1", "", nil)
	live := policyPodOf("shop", "live", "node-1", "198.18.0.13", nil)
	rs := Build(Input{NodeName: "node-1", Pods: []*api.Pod{host, done, pending, live},
		Policies: []*api.NetworkPolicy{policyOf("shop", "p", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}
		})}})
	if len(rs.PolicyIngress) != 1 {
		t.Fatalf("isolated %v, want only the live pod", rs.PolicyIngress)
	}
	if got := describe(rs, "198.18.0.13"); got != "in: [198.18.0.13] any" {
		t.Fatalf("got %q", got)
	}
}

func TestMergeAndSubtractRanges(t *testing.T) {
	r := func(a, b string) AddrRange { return AddrRange{netip.MustParseAddr(a), netip.MustParseAddr(b)} }
	got := mergeRanges([]AddrRange{r("10.0.0.5", "10.0.0.5"), r("10.0.0.1", "10.0.0.3"), r("10.0.0.4", "10.0.0.4"), r("10.0.0.2", "10.0.0.2"), r("10.0.0.9", "10.0.0.9")})
	if want := []AddrRange{r("10.0.0.1", "10.0.0.5"), r("10.0.0.9", "10.0.0.9")}; !slices.Equal(got, want) {
		t.Errorf("merge: %v, want %v", got, want)
	}
	got = blockRanges(corev1.IPv4Protocol, &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"0.0.0.0/8", "255.255.255.255/32"}})
	if want := []AddrRange{r("1.0.0.0", "255.255.255.254")}; !slices.Equal(got, want) {
		t.Errorf("block: %v, want %v", got, want)
	}
}

func ptrTo[T any](v T) *T { return &v }

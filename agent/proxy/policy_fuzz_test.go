package proxy

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/berth-dev/berth/api"
)

// FuzzBuildPolicies builds the rules of any policy spec a JSON body
// decodes to over a fixed set of pods: it must not panic, must give the
// same rules twice, and what it gives must hang together: every
// address maps to a chain, every rule's set exists, each set's ranges
// are sorted and apart, as an nftables interval set needs them.
func FuzzBuildPolicies(f *testing.F) {
	for _, seed := range []string{
		`{"podSelector":{}}`,
		`{"podSelector":{"matchLabels":{"app":"web"}},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"team":"frontend"}},"podSelector":{}}],"ports":[{"port":"http"},{"port":8000,"endPort":8100}]}]}`,
		`{"podSelector":{},"policyTypes":["Egress"],"egress":[{"to":[{"ipBlock":{"cidr":"198.18.0.0/15","except":["198.18.2.0/24","198.18.2.10/32"]}}],"ports":[{"port":"http","protocol":"UDP"}]}]}`,
		`{"podSelector":{"matchExpressions":[{"key":"app","operator":"NotIn","values":["db"]}]},"ingress":[{"from":[{"ipBlock":{"cidr":"0.0.0.0/0"}}]}]}`,
		`{"podSelector":{},"egress":[{"to":[{"ipBlock":{"cidr":"::/0","except":["fd00:2::/64","fd00:2::10/128"]}},{"ipBlock":{"cidr":"198.18.0.0/15"}}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	web := map[string]string{"app": "web"}
	http := api.ContainerPort{Name: "http", ContainerPort: 8080}
	pods := []*api.Pod{
		policyPodOf("shop", "web", "node-1", "198.18.2.10", web, http),
		policyPodOf("shop", "db", "node-1", "198.18.2.11", map[string]string{"app": "db"}),
		policyPodOf("shop", "remote", "node-2", "198.18.3.10", web, api.ContainerPort{Name: "http", ContainerPort: 9090, Protocol: api.ProtocolUDP}),
		policyPodOf("front", "client", "node-1", "198.18.4.10", map[string]string{"role": "client"}),
	}
	// Dual-stack pods: each family's Ruleset holds that family's alone.
	pods[0].Status.PodIPs = []api.PodIP{{IP: "198.18.2.10"}, {IP: "fd00:2::10"}}
	pods[3].Status.PodIPs = []api.PodIP{{IP: "198.18.4.10"}, {IP: "fd00:4::10"}}
	namespaces := []*api.Namespace{nsOf("shop", nil), nsOf("front", map[string]string{"team": "frontend"})}
	f.Fuzz(func(t *testing.T, data []byte) {
		var spec networkingv1.NetworkPolicySpec
		if json.Unmarshal(data, &spec) != nil {
			return
		}
		var policies []*api.NetworkPolicy
		for _, ns := range []string{"shop", "front"} {
			np := &api.NetworkPolicy{Spec: *spec.DeepCopy()}
			np.Namespace, np.Name = ns, "fuzz"
			policies = append(policies, np)
		}
		for _, fam := range []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol} {
			checkPolicyRules(t, Build(Input{Family: fam, NodeName: "node-1", Pods: pods, Namespaces: namespaces, Policies: policies}))
		}
		in := Input{NodeName: "node-1", Pods: pods, Namespaces: namespaces, Policies: policies}
		if !reflect.DeepEqual(Build(in), Build(in)) {
			t.Fatalf("two builds differ")
		}
	})
}

// checkPolicyRules fails t unless rs's policy rules hang together.
func checkPolicyRules(t *testing.T, rs *Ruleset) {
	t.Helper()
	for a, chain := range rs.PolicyIngress {
		if !inFamily(rs.Family, a) {
			t.Fatalf("%s in the %s rules", a, rs.Family)
		}
		if c, ok := rs.PolicyChains[chain]; !ok || c.Egress {
			t.Fatalf("%s: ingress chain %q missing or egress", a, chain)
		}
	}
	for a, chain := range rs.PolicyEgress {
		if c, ok := rs.PolicyChains[chain]; !ok || !c.Egress {
			t.Fatalf("%s: egress chain %q missing or ingress", a, chain)
		}
	}
	for name, c := range rs.PolicyChains {
		for _, r := range c.Rules {
			if _, ok := rs.PolicySets[r.Set]; r.Set != "" && !ok {
				t.Fatalf("chain %s: set %q missing", name, r.Set)
			}
			for _, p := range r.Ports {
				if p.First > p.Last || p.First == 0 && p.Last != 0 {
					t.Fatalf("chain %s: port range %+v", name, p)
				}
			}
		}
	}
	for name, ranges := range rs.PolicySets {
		for i, r := range ranges {
			if !inFamily(rs.Family, r.First) || !inFamily(rs.Family, r.Last) || r.Last.Less(r.First) {
				t.Fatalf("set %s: range %v", name, r)
			}
			if i > 0 && !ranges[i-1].Last.Next().Less(r.First) {
				t.Fatalf("set %s: ranges %v and %v touch or overlap", name, ranges[i-1], r)
			}
		}
	}
}

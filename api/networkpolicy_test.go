package api

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestValidateNetworkPolicy: Kubernetes' rules and messages for a
// NetworkPolicy's ports, peers, ipBlocks and policy types.
func TestValidateNetworkPolicy(t *testing.T) {
	port := func(p intstr.IntOrString) *intstr.IntOrString { return &p }
	end := func(p int32) *int32 { return &p }
	proto := func(p corev1.Protocol) *corev1.Protocol { return &p }
	runValidation(t, func() *NetworkPolicy {
		return &NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}},
				Ports: []networkingv1.NetworkPolicyPort{{Port: port(intstr.FromInt32(80))}},
			}},
		}}
	}, []validationCase[*NetworkPolicy]{
		{"named port", func(o *NetworkPolicy) { o.Spec.Ingress[0].Ports[0].Port = port(intstr.FromString("http")) }, nil},
		{"port range", func(o *NetworkPolicy) { o.Spec.Ingress[0].Ports[0].EndPort = end(90) }, nil},
		{"bad protocol", func(o *NetworkPolicy) { o.Spec.Ingress[0].Ports[0].Protocol = proto("ICMP") },
			[]string{`spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`}},
		{"port out of range", func(o *NetworkPolicy) { o.Spec.Ingress[0].Ports[0].Port = port(intstr.FromInt32(70000)) },
			[]string{"spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"}},
		{"endPort below port", func(o *NetworkPolicy) { o.Spec.Ingress[0].Ports[0].EndPort = end(79) },
			[]string{"spec.ingress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal to `port`"}},
		{"endPort with a named port", func(o *NetworkPolicy) {
			o.Spec.Ingress[0].Ports[0].Port, o.Spec.Ingress[0].Ports[0].EndPort = port(intstr.FromString("http")), end(90)
		}, []string{"spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric"}},
		{"endPort without port", func(o *NetworkPolicy) {
			o.Spec.Ingress[0].Ports[0].Port, o.Spec.Ingress[0].Ports[0].EndPort = nil, end(90)
		}, []string{"spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is not specified"}},
		{"bad port name", func(o *NetworkPolicy) { o.Spec.Ingress[0].Ports[0].Port = port(intstr.FromString("no_such")) },
			[]string{`spec.ingress[0].ports[0].port: Invalid value: "no_such"`}},
		{"empty peer", func(o *NetworkPolicy) { o.Spec.Ingress[0].From[0] = networkingv1.NetworkPolicyPeer{} },
			[]string{"spec.ingress[0].from[0]: Required value: must specify a peer"}},
		{"ipBlock and a selector", func(o *NetworkPolicy) {
			o.Spec.Ingress[0].From[0].IPBlock = &networkingv1.IPBlock{CIDR: "198.18.0.0/15"}
		}, []string{"spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer"}},
		{"both selectors", func(o *NetworkPolicy) {
			o.Spec.Ingress[0].From[0].PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}
		}, nil},
		{"ipBlock without cidr", func(o *NetworkPolicy) {
			o.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{}}}}}
		}, []string{"spec.egress[0].to[0].ipBlock.cidr: Required value"}},
		{"ipBlock bad cidr", func(o *NetworkPolicy) {
			o.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "198.18.0.1/15"}}}}}
		}, []string{`spec.egress[0].to[0].ipBlock.cidr: Invalid value: "198.18.0.1/15": must not have bits set beyond the prefix length`}},
		{"except not inside", func(o *NetworkPolicy) {
			o.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{
				CIDR: "198.18.0.0/16", Except: []string{"198.18.1.0/24", "198.19.0.0/24", "198.18.0.0/16"}}}}}}
		}, []string{
			`spec.egress[0].to[0].ipBlock.except[1]: Invalid value: "198.19.0.0/24": must be a strict subset of ` + "`cidr`",
			`spec.egress[0].to[0].ipBlock.except[2]: Invalid value: "198.18.0.0/16": must be a strict subset of ` + "`cidr`",
		}},
		{"bad selector", func(o *NetworkPolicy) {
			o.Spec.PodSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}
		}, []string{`spec.podSelector.matchExpressions[0].operator: Invalid value: "Near"`}},
		{"bad policy type", func(o *NetworkPolicy) { o.Spec.PolicyTypes = []networkingv1.PolicyType{"Sideways"} },
			[]string{`spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"`}},
		{"three policy types", func(o *NetworkPolicy) {
			o.Spec.PolicyTypes = []networkingv1.PolicyType{"Ingress", "Egress", "Ingress"}
		}, []string{"spec.policyTypes: Invalid value:"}},
		{"no namespace", func(o *NetworkPolicy) { o.Namespace = "" }, []string{"metadata.namespace: Required value"}},
	})
}

// TestDefaultNetworkPolicy: policy types and port protocols as
// Kubernetes defaults them.
func TestDefaultNetworkPolicy(t *testing.T) {
	np := &NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{}}}},
	}}
	Default(np)
	if got := np.Spec.PolicyTypes; len(got) != 1 || got[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policyTypes %v, want [Ingress]", got)
	}
	if p := np.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
		t.Errorf("protocol %v, want TCP", p)
	}
	np = &NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{}}}}
	Default(np)
	if got := np.Spec.PolicyTypes; len(got) != 2 || got[1] != networkingv1.PolicyTypeEgress {
		t.Errorf("policyTypes %v, want [Ingress Egress]", got)
	}
	np = &NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}}
	Default(np)
	if got := np.Spec.PolicyTypes; len(got) != 1 || got[0] != networkingv1.PolicyTypeEgress {
		t.Errorf("policyTypes %v, want [Egress] as given", got)
	}
}

// TestDecodeNetworkPolicyStrictly: an unknown field of the spec is an
// error that names the file, the document and the field.
func TestDecodeNetworkPolicyStrictly(t *testing.T) {
	doc := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: x\n  namespace: shop\nspec:\n  podSelector: {}\n  ingress:\n    - form: []\n"
	_, errs := DecodeStream("policy.yaml", []byte(doc), DecodeOptions{})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "policy.yaml") || !strings.Contains(errs[0].Error(), "spec.ingress[0].form") {
		t.Fatalf("errors %v, want one naming policy.yaml and spec.ingress[0].form", errs)
	}
}

package api

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// +kubebuilder:object:root=true

// NetworkPolicy is a networking.k8s.io/v1 NetworkPolicy: which
// connections the pods it selects may take in (ingress) and open
// (egress). A pod no policy selects for a direction is open in that
// direction; once one does, only what some selecting policy allows
// passes. The spec is Kubernetes' own type, and each node's service
// proxy enforces it in its nftables table.
type NetworkPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec selects the pods of the namespace the policy holds for and
	// says what they may take in and open.
	Spec networkingv1.NetworkPolicySpec `json:"spec,omitempty"`
}

// defaultNetworkPolicy fills in what Kubernetes defaults: a port's
// protocol is TCP, and without policyTypes a policy is for Ingress, and
// for Egress too when it has egress rules.
func defaultNetworkPolicy(np *NetworkPolicy) {
	s := &np.Spec
	for i := range s.Ingress {
		defaultPolicyPorts(s.Ingress[i].Ports)
	}
	for i := range s.Egress {
		defaultPolicyPorts(s.Egress[i].Ports)
	}
	if len(s.PolicyTypes) == 0 {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(s.Egress) > 0 {
			s.PolicyTypes = append(s.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}

func defaultPolicyPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		if ports[i].Protocol == nil {
			tcp := corev1.ProtocolTCP
			ports[i].Protocol = &tcp
		}
	}
}

// validateNetworkPolicy is Kubernetes' ValidateNetworkPolicySpec, with
// its messages.
func validateNetworkPolicy(np *NetworkPolicy) field.ErrorList {
	s, p := &np.Spec, field.NewPath("spec")
	errs := validateLabelSelector(&s.PodSelector, false, p.Child("podSelector"))
	for i, r := range s.Ingress {
		rp := p.Child("ingress").Index(i)
		for j := range r.Ports {
			errs = append(errs, validatePolicyPort(&r.Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range r.From {
			errs = append(errs, validatePolicyPeer(&r.From[j], rp.Child("from").Index(j))...)
		}
	}
	for i, r := range s.Egress {
		rp := p.Child("egress").Index(i)
		for j := range r.Ports {
			errs = append(errs, validatePolicyPort(&r.Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range r.To {
			errs = append(errs, validatePolicyPeer(&r.To[j], rp.Child("to").Index(j))...)
		}
	}
	allowed := []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
	if len(s.PolicyTypes) > len(allowed) {
		return append(errs, field.Invalid(p.Child("policyTypes"), s.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range s.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(p.Child("policyTypes").Index(i), t, allowed))
		}
	}
	return errs
}

func validatePolicyPort(port *networkingv1.NetworkPolicyPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := port.Protocol; pr != nil && *pr != corev1.ProtocolTCP && *pr != corev1.ProtocolUDP && *pr != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(p.Child("protocol"), *pr, []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
	}
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		errs = append(errs, validatePortNumber(port.Port.IntVal, p.Child("port"))...)
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(p.Child("endPort"), port.Port.IntVal, "must be greater than or equal to `port`"))
			}
			errs = append(errs, validatePortNumber(*port.EndPort, p.Child("endPort"))...)
		}
	default:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		errs = append(errs, validatePortName(port.Port.StrVal, p.Child("port"))...)
	}
	return errs
}

func validatePolicyPeer(peer *networkingv1.NetworkPolicyPeer, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if peer.PodSelector != nil {
		n++
		errs = append(errs, validateLabelSelector(peer.PodSelector, false, p.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		errs = append(errs, validateLabelSelector(peer.NamespaceSelector, false, p.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		n++
		errs = append(errs, validateIPBlock(peer.IPBlock, p.Child("ipBlock"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(p, "must specify a peer"))
	case n > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(p, "may not specify both ipBlock and another peer"))
	}
	return errs
}

func validateIPBlock(b *networkingv1.IPBlock, p *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(p.Child("cidr"), "")}
	}
	errs := validation.IsValidCIDRForLegacyField(p.Child("cidr"), b.CIDR, true, nil)
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return errs
	}
	for i, e := range b.Except {
		ep := p.Child("except").Index(i)
		errs = append(errs, validation.IsValidCIDRForLegacyField(ep, e, true, nil)...)
		except, err := netip.ParsePrefix(e)
		if err != nil {
			continue
		}
		if !cidr.Masked().Contains(except.Masked().Addr()) || cidr.Bits() >= except.Bits() {
			errs = append(errs, field.Invalid(ep, e, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}

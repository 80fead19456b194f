package api

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var serviceTypes = []ServiceType{ServiceTypeClusterIP, ServiceTypeNodePort, ServiceTypeLoadBalancer, ServiceTypeExternalName}

func validateServiceSpec(spec *ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.Type {
	case ServiceTypeClusterIP, ServiceTypeNodePort, ServiceTypeLoadBalancer:
		if len(spec.Ports) == 0 && spec.ClusterIP != ClusterIPNone {
			errs = append(errs, field.Required(p.Child("ports"), ""))
		}
		if spec.Type != ServiceTypeClusterIP && spec.ClusterIP == ClusterIPNone {
			errs = append(errs, field.Invalid(p.Child("clusterIPs").Index(0), spec.ClusterIP, "may not be set to 'None' for LoadBalancer or NodePort services"))
		}
		errs = append(errs, validateClusterIPs(spec, p)...)
	case ServiceTypeExternalName:
		ep := p.Child("externalName")
		if spec.ExternalName == "" {
			errs = append(errs, field.Required(ep, "an ExternalName service names the host it aliases"))
		} else {
			name := strings.TrimSuffix(spec.ExternalName, ".")
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(ep, spec.ExternalName, msg))
			}
		}
		if spec.ClusterIP != "" {
			errs = append(errs, field.Forbidden(p.Child("clusterIP"), "may not be set for ExternalName services"))
		}
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(p.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(p.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, serviceTypes))
	}
	errs = append(errs, validateLabels(spec.Selector, p.Child("selector"))...)
	errs = append(errs, validateServicePorts(spec.Ports, p.Child("ports"))...)
	errs = append(errs, validateServiceTraffic(spec, p)...)
	return errs
}

var (
	ipFamilies       = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	ipFamilyPolicies = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack}
	affinities       = []corev1.ServiceAffinity{corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP}
	externalPolicies = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	internalPolicies = []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
)

// maxAffinityTimeout is Kubernetes' bound on the ClientIP affinity's
// timeout: a day.
const maxAffinityTimeout = 86400

// validateClusterIPs checks the form of the virtual IPs and their
// families, as Kubernetes does; whether an address lies in the service
// CIDR and is free is the allocator's to say, in the write.
func validateClusterIPs(spec *ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ipsPath := p.Child("clusterIPs")
	if spec.ClusterIP != "" && len(spec.ClusterIPs) > 0 && spec.ClusterIPs[0] != spec.ClusterIP {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	headless := spec.ClusterIP == ClusterIPNone || len(spec.ClusterIPs) > 0 && spec.ClusterIPs[0] == ClusterIPNone
	if spec.ClusterIP != "" && spec.ClusterIP != ClusterIPNone && len(spec.ClusterIPs) == 0 {
		errs = append(errs, validateServiceIP(spec.ClusterIP, p.Child("clusterIP"))...)
	}
	var families []bool // is IPv4, per address
	for i, ip := range spec.ClusterIPs {
		ipp := ipsPath.Index(i)
		switch {
		case ip == ClusterIPNone && i == 0:
		case ip == ClusterIPNone, headless:
			errs = append(errs, field.Invalid(ipp, ip, "must be empty when the first value is 'None'"))
		default:
			if e := validateServiceIP(ip, ipp); len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
			a, _ := netip.ParseAddr(ip)
			families = append(families, a.Is4())
		}
	}
	if len(families) == 2 && families[0] == families[1] {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	fp := p.Child("ipFamilies")
	if len(spec.IPFamilies) > 2 {
		errs = append(errs, field.Invalid(fp, spec.IPFamilies, "may only hold up to 2 values"))
	}
	seen := map[corev1.IPFamily]bool{}
	for i, f := range spec.IPFamilies {
		errs = append(errs, validateOneOf(f, ipFamilies, fp.Index(i))...)
		if seen[f] {
			errs = append(errs, field.Duplicate(fp.Index(i), f))
		}
		seen[f] = true
		if i < len(families) && families[i] != (f == corev1.IPv4Protocol) {
			errs = append(errs, field.Invalid(fp.Index(i), f, fmt.Sprintf("does not match the family of clusterIPs[%d]", i)))
		}
	}
	if pol := spec.IPFamilyPolicy; pol != nil {
		errs = append(errs, validateOneOf(*pol, ipFamilyPolicies, p.Child("ipFamilyPolicy"))...)
		if *pol == corev1.IPFamilyPolicySingleStack {
			if len(spec.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "'SingleStack' ipFamilyPolicy may not have more than one clusterIP"))
			}
			if len(spec.IPFamilies) > 1 {
				errs = append(errs, field.Invalid(fp, spec.IPFamilies, "'SingleStack' ipFamilyPolicy may not have more than one ipFamily"))
			}
		}
	} else if len(spec.ClusterIPs) > 1 || len(spec.IPFamilies) > 1 {
		errs = append(errs, field.Required(p.Child("ipFamilyPolicy"), "must be 'PreferDualStack' or 'RequireDualStack' for a dual-stack service"))
	}
	return errs
}

// validateServiceIP checks one virtual IP's form.
func validateServiceIP(ip string, p *field.Path) field.ErrorList {
	if errs := validation.IsValidIP(p, ip); len(errs) > 0 {
		return errs
	}
	if a, _ := netip.ParseAddr(ip); a.Is4In6() {
		return field.ErrorList{field.Invalid(p, ip, "must be a valid IPv4 or IPv6 address, not an IPv4-mapped one")}
	}
	return nil
}

// validateServiceTraffic checks node ports, affinity and the traffic
// policies against the service's type, as Kubernetes does.
func validateServiceTraffic(spec *ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	external := spec.Type == ServiceTypeNodePort || spec.Type == ServiceTypeLoadBalancer
	for i, port := range spec.Ports {
		np := p.Child("ports").Index(i).Child("nodePort")
		switch {
		case port.NodePort == 0:
		case !external:
			errs = append(errs, field.Forbidden(np, "may not be used when `type` is '"+string(spec.Type)+"'"))
		default:
			errs = append(errs, validatePortNumber(port.NodePort, np)...)
		}
	}
	if spec.SessionAffinity != "" {
		errs = append(errs, validateOneOf(spec.SessionAffinity, affinities, p.Child("sessionAffinity"))...)
	}
	if c := spec.SessionAffinityConfig; c != nil {
		cp := p.Child("sessionAffinityConfig")
		switch {
		case spec.SessionAffinity != corev1.ServiceAffinityClientIP:
			errs = append(errs, field.Invalid(cp, c, "must not be set when session affinity is "+string(spec.SessionAffinity)))
		case c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil:
			if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxAffinityTimeout {
				errs = append(errs, field.Invalid(cp.Child("clientIP", "timeoutSeconds"), t, fmt.Sprintf("must be greater than 0 and less than %d", maxAffinityTimeout)))
			}
		}
	}
	if pol := spec.ExternalTrafficPolicy; pol != "" {
		pp := p.Child("externalTrafficPolicy")
		if !external && len(spec.ExternalIPs) == 0 {
			errs = append(errs, field.Invalid(pp, pol, "may only be set for externally-accessible services"))
		} else {
			errs = append(errs, validateOneOf(pol, externalPolicies, pp)...)
		}
	}
	if pol := spec.InternalTrafficPolicy; pol != nil {
		errs = append(errs, validateOneOf(*pol, internalPolicies, p.Child("internalTrafficPolicy"))...)
	}
	for i, ip := range spec.ExternalIPs {
		errs = append(errs, validateServiceIP(ip, p.Child("externalIPs").Index(i))...)
	}
	if spec.LoadBalancerIP != "" {
		errs = append(errs, validateServiceIP(spec.LoadBalancerIP, p.Child("loadBalancerIP"))...)
	}
	for i, r := range spec.LoadBalancerSourceRanges {
		if _, err := netip.ParsePrefix(strings.TrimSpace(r)); err != nil {
			errs = append(errs, field.Invalid(p.Child("loadBalancerSourceRanges").Index(i), r, "must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 "))
		}
	}
	if spec.Type != ServiceTypeLoadBalancer {
		if spec.LoadBalancerClass != nil {
			errs = append(errs, field.Forbidden(p.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
		}
		if spec.AllocateLoadBalancerNodePorts != nil {
			errs = append(errs, field.Forbidden(p.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
		}
	}
	return errs
}

// validateSourceRangesAnnotation checks the annotation form of
// loadBalancerSourceRanges where it is read (a LoadBalancer Service
// without the field), with Kubernetes' message.
func validateSourceRangesAnnotation(svc *Service) field.ErrorList {
	v, ok := svc.Annotations[AnnotationLoadBalancerSourceRanges]
	if !ok || svc.Spec.Type != ServiceTypeLoadBalancer || len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		return nil
	}
	for _, r := range LoadBalancerSourceRanges(svc) {
		if _, err := netip.ParsePrefix(r); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations").Key(AnnotationLoadBalancerSourceRanges), v,
				"must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 ")}
		}
	}
	return nil
}

func validateServicePorts(ports []ServicePort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	portProtos := sets.New[string]()
	for i, port := range ports {
		pp := p.Index(i)
		np := pp.Child("name")
		switch {
		case port.Name == "" && len(ports) > 1:
			errs = append(errs, field.Required(np, "when a service has more than one port, each needs a name"))
		case port.Name == "":
		case names.Has(port.Name):
			errs = append(errs, field.Duplicate(np, port.Name))
		default:
			errs = append(errs, validateDNSLabel(port.Name, np)...)
		}
		names.Insert(port.Name)
		errs = append(errs, validatePortNumber(port.Port, pp.Child("port"))...)
		errs = append(errs, validateProtocol(port.Protocol, pp.Child("protocol"))...)
		id := fmt.Sprintf("%d/%s", port.Port, port.Protocol)
		if portProtos.Has(id) {
			errs = append(errs, field.Duplicate(pp, id))
		}
		portProtos.Insert(id)
		if port.TargetPort.Type == intstr.Int && port.TargetPort.IntVal == 0 {
			errs = append(errs, field.Required(pp.Child("targetPort"), ""))
		} else {
			errs = append(errs, validatePortNumOrName(port.TargetPort, pp.Child("targetPort"))...)
		}
		if ap := port.AppProtocol; ap != nil {
			for _, msg := range content.IsLabelKey(*ap) {
				errs = append(errs, field.Invalid(pp.Child("appProtocol"), *ap, msg))
			}
		}
	}
	return errs
}

func validateEndpoints(ep *Endpoints) field.ErrorList {
	var errs field.ErrorList
	for i, ss := range ep.Subsets {
		sp := field.NewPath("subsets").Index(i)
		for j, a := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&a, sp.Child("addresses").Index(j))...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&a, sp.Child("notReadyAddresses").Index(j))...)
		}
		for j, port := range ss.Ports {
			pp := sp.Child("ports").Index(j)
			if port.Name != "" {
				errs = append(errs, validateDNSLabel(port.Name, pp.Child("name"))...)
			}
			errs = append(errs, validatePortNumber(port.Port, pp.Child("port"))...)
			errs = append(errs, validateProtocol(port.Protocol, pp.Child("protocol"))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *EndpointAddress, p *field.Path) field.ErrorList {
	errs := validation.IsValidIP(p.Child("ip"), a.IP)
	if a.Hostname != "" {
		errs = append(errs, validateDNSLabel(a.Hostname, p.Child("hostname"))...)
	}
	if a.NodeName != nil && *a.NodeName != "" {
		errs = append(errs, validateDNSSubdomain(*a.NodeName, p.Child("nodeName"))...)
	}
	return errs
}

// Limits of an EndpointSlice, Kubernetes'.
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 100
)

var supportedAddressTypes = []AddressType{AddressTypeIPv4, AddressTypeIPv6, AddressTypeFQDN}

// validateEndpointSlice checks what Kubernetes checks of a slice, but for
// its refusal of loopback addresses: under the exec runtime a pod's IP is
// its node's, and a node on one machine may well be 127.0.0.x.
func validateEndpointSlice(es *EndpointSlice) field.ErrorList {
	errs := validateOneOf(es.AddressType, supportedAddressTypes, field.NewPath("addressType"))
	ep := field.NewPath("endpoints")
	if len(es.Endpoints) > maxSliceEndpoints {
		errs = append(errs, field.TooMany(ep, len(es.Endpoints), maxSliceEndpoints))
	} else {
		for i := range es.Endpoints {
			errs = append(errs, validateSliceEndpoint(&es.Endpoints[i], es.AddressType, ep.Index(i))...)
		}
	}
	pp := field.NewPath("ports")
	if len(es.Ports) > maxSlicePorts {
		return append(errs, field.TooMany(pp, len(es.Ports), maxSlicePorts))
	}
	names := sets.New[string]()
	for i, port := range es.Ports {
		p := pp.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			errs = append(errs, validateDNSLabel(name, p.Child("name"))...)
		}
		if names.Has(name) {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names.Insert(name)
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else {
			errs = append(errs, validateProtocol(*port.Protocol, p.Child("protocol"))...)
		}
		if port.Port != nil {
			errs = append(errs, validatePortNumber(*port.Port, p.Child("port"))...)
		}
		if ap := port.AppProtocol; ap != nil {
			for _, msg := range content.IsLabelKey(*ap) {
				errs = append(errs, field.Invalid(p.Child("appProtocol"), *ap, msg))
			}
		}
	}
	return errs
}

func validateSliceEndpoint(e *Endpoint, at AddressType, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ap := p.Child("addresses")
	switch {
	case len(e.Addresses) == 0:
		errs = append(errs, field.Required(ap, "must contain at least 1 address"))
	case len(e.Addresses) > maxSliceAddresses:
		errs = append(errs, field.TooMany(ap, len(e.Addresses), maxSliceAddresses))
	}
	for i, a := range e.Addresses {
		errs = append(errs, validateSliceAddress(a, at, ap.Index(i))...)
	}
	if e.Hostname != nil {
		errs = append(errs, validateDNSLabel(*e.Hostname, p.Child("hostname"))...)
	}
	if e.NodeName != nil {
		errs = append(errs, validateDNSSubdomain(*e.NodeName, p.Child("nodeName"))...)
	}
	return errs
}

// validateSliceAddress checks an address against its slice's type; one
// of an unknown type is left to the type's own error.
func validateSliceAddress(a string, at AddressType, p *field.Path) field.ErrorList {
	switch at {
	case AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(p, a)
	case AddressTypeIPv4, AddressTypeIPv6:
		if errs := validation.IsValidIP(p, a); len(errs) > 0 {
			return errs
		}
		if ip, err := netip.ParseAddr(a); err != nil || ip.Is4() != (at == AddressTypeIPv4) {
			return field.ErrorList{field.Invalid(p, a, "must be a valid "+string(at)+" address")}
		}
	}
	return nil
}

package api

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var serviceTypes = []ServiceType{ServiceTypeClusterIP, ServiceTypeExternalName}

func validateServiceSpec(spec *ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.Type {
	case ServiceTypeClusterIP:
		if len(spec.Ports) == 0 && spec.ClusterIP != ClusterIPNone {
			errs = append(errs, field.Required(p.Child("ports"), "a ClusterIP service needs ports unless it is headless (clusterIP: None)"))
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
	case "":
		errs = append(errs, field.Required(p.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, serviceTypes))
	}
	errs = append(errs, validateLabels(spec.Selector, p.Child("selector"))...)
	return append(errs, validateServicePorts(spec.Ports, p.Child("ports"))...)
}

// validateClusterIPs allows only headless services: berth has no virtual
// IPs in this version (SPEC §4), so an address would promise what nothing
// delivers.
func validateClusterIPs(spec *ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.ClusterIP != "" && spec.ClusterIP != ClusterIPNone {
		errs = append(errs, field.Invalid(p.Child("clusterIP"), spec.ClusterIP, "berth has no virtual IPs: must be empty or None"))
	}
	for i, ip := range spec.ClusterIPs {
		ipp := p.Child("clusterIPs").Index(i)
		switch {
		case ip != ClusterIPNone:
			errs = append(errs, field.Invalid(ipp, ip, "berth has no virtual IPs: must be None"))
		case i > 0:
			errs = append(errs, field.Invalid(ipp, ip, "None may only be given once"))
		case spec.ClusterIP != ip:
			errs = append(errs, field.Invalid(ipp, ip, "must match `clusterIP`"))
		}
	}
	return errs
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

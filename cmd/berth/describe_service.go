package main

import (
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describeService follows kubectl: selector, type, addresses, and for
// each port its target and the ready endpoints behind it.
func describeService(w *describeWriter, obj api.Object, dc *describeContext) {
	s := obj.(*api.Service)
	describeHeader(w, s, true)
	w.write(level0, "Selector:\t%s\n", labels.FormatLabels(s.Spec.Selector))
	w.write(level0, "Type:\t%s\n", s.Spec.Type)
	if s.Spec.IPFamilyPolicy != nil {
		w.write(level0, "IP Family Policy:\t%s\n", *s.Spec.IPFamilyPolicy)
	}
	if len(s.Spec.IPFamilies) > 0 {
		fams := make([]string, len(s.Spec.IPFamilies))
		for i, f := range s.Spec.IPFamilies {
			fams[i] = string(f)
		}
		w.write(level0, "IP Families:\t%s\n", strings.Join(fams, ","))
	}
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 && s.Spec.ClusterIP != "" {
		ips = []string{s.Spec.ClusterIP}
	}
	ip := ""
	if len(ips) > 0 {
		ip = ips[0]
	}
	w.write(level0, "IP:\t%s\n", ip)
	w.write(level0, "IPs:\t%s\n", orNone(strings.Join(ips, ",")))
	if len(s.Spec.ExternalIPs) > 0 {
		w.write(level0, "External IPs:\t%s\n", strings.Join(s.Spec.ExternalIPs, ","))
	}
	if ing := s.Status.LoadBalancer.Ingress; len(ing) > 0 {
		var addrs []string
		for _, i := range ing {
			addrs = append(addrs, i.IP+i.Hostname)
		}
		w.write(level0, "LoadBalancer Ingress:\t%s\n", strings.Join(addrs, ", "))
	}
	if s.Spec.Type == api.ServiceTypeExternalName {
		w.write(level0, "External Name:\t%s\n", s.Spec.ExternalName)
	}
	for _, p := range s.Spec.Ports {
		name := p.Name
		if name == "" {
			name = "<unset>"
		}
		w.write(level0, "Port:\t%s\t%d/%s\n", name, p.Port, p.Protocol)
		if p.TargetPort.Type == intstr.String {
			w.write(level0, "TargetPort:\t%s/%s\n", p.TargetPort.StrVal, p.Protocol)
		} else {
			w.write(level0, "TargetPort:\t%d/%s\n", p.TargetPort.IntVal, p.Protocol)
		}
		if p.NodePort != 0 {
			w.write(level0, "NodePort:\t%s\t%d/%s\n", name, p.NodePort, p.Protocol)
		}
		eps := ""
		if dc.endpoints != nil {
			eps = table.FormatEndpoints(dc.endpoints, map[string]bool{p.Name: true})
		}
		w.write(level0, "Endpoints:\t%s\n", orNone(eps))
	}
	if s.Spec.SessionAffinity != "" {
		w.write(level0, "Session Affinity:\t%s\n", s.Spec.SessionAffinity)
	}
	if s.Spec.PublishNotReadyAddresses {
		w.write(level0, "Publish Not Ready Addresses:\ttrue\n")
	}
	if s.Spec.ExternalTrafficPolicy != "" {
		w.write(level0, "External Traffic Policy:\t%s\n", s.Spec.ExternalTrafficPolicy)
	}
	if p := s.Spec.InternalTrafficPolicy; p != nil {
		w.write(level0, "Internal Traffic Policy:\t%s\n", *p)
	}
}

// describeEndpoints follows kubectl: each subset's ready and not-ready
// addresses and its ports.
func describeEndpoints(w *describeWriter, obj api.Object, _ *describeContext) {
	ep := obj.(*api.Endpoints)
	describeHeader(w, ep, true)
	w.write(level0, "Subsets:\n")
	for _, ss := range ep.Subsets {
		w.write(level1, "Addresses:\t%s\n", orNone(addressList(ss.Addresses)))
		w.write(level1, "NotReadyAddresses:\t%s\n", orNone(addressList(ss.NotReadyAddresses)))
		if len(ss.Ports) > 0 {
			w.write(level1, "Ports:\n")
			w.write(level2, "Name\tPort\tProtocol\n")
			w.write(level2, "----\t----\t--------\n")
			for _, p := range ss.Ports {
				name := p.Name
				if name == "" {
					name = "<unset>"
				}
				w.write(level2, "%s\t%d\t%s\n", name, p.Port, p.Protocol)
			}
		}
		w.write(level0, "\n")
	}
}

func addressList(as []api.EndpointAddress) string {
	ips := make([]string, len(as))
	for i, a := range as {
		ips[i] = a.IP
	}
	return strings.Join(ips, ",")
}

package main

import (
	"net"
	"slices"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describeIngress follows kubectl: the address, the class, the default
// backend, the TLS entries and each rule's paths with the Service port
// and the ready endpoints behind it.
func describeIngress(w *describeWriter, obj api.Object, dc *describeContext) {
	ing := obj.(*api.Ingress)
	w.write(level0, "Name:\t%s\n", ing.Name)
	describeLabels(w, level0, "Labels", ing.Labels)
	w.write(level0, "Namespace:\t%s\n", ing.Namespace)
	w.write(level0, "Address:\t%s\n", ingressAddresses(ing))
	class := table.None
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	w.write(level0, "Ingress Class:\t%s\n", class)
	def := "<default>"
	if ing.Spec.DefaultBackend != nil {
		def = ingressBackend(ing.Namespace, ing.Spec.DefaultBackend, dc)
	}
	w.write(level0, "Default backend:\t%s\n", def)
	if len(ing.Spec.TLS) > 0 {
		w.write(level0, "TLS:\n")
		for _, t := range ing.Spec.TLS {
			if t.SecretName == "" {
				w.write(level1, "SNI routes %s\n", strings.Join(t.Hosts, ","))
			} else {
				w.write(level1, "%s terminates %s\n", t.SecretName, strings.Join(t.Hosts, ","))
			}
		}
	}
	w.write(level0, "Rules:\n  Host\tPath\tBackends\n")
	w.write(level1, "----\t----\t--------\n")
	rules := 0
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		rules++
		host := r.Host
		if host == "" {
			host = "*"
		}
		w.write(level1, "%s\t\n", host)
		for _, p := range r.HTTP.Paths {
			w.write(level2, "\t%s \t%s\n", p.Path, ingressBackend(ing.Namespace, &p.Backend, dc))
		}
	}
	if rules == 0 {
		w.write(level1, "*\t*\t%s\n", def)
	}
	describeAnnotations(w, ing.Annotations)
}

// ingressAddresses is status.loadBalancer.ingress, each IP or host name
// once, sorted, as kubectl's describe shows it (blank when none).
func ingressAddresses(ing *api.Ingress) string {
	var out []string
	for _, a := range ing.Status.LoadBalancer.Ingress {
		switch {
		case a.IP != "":
			out = append(out, a.IP)
		case a.Hostname != "":
			out = append(out, a.Hostname)
		}
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ",")
}

// ingressBackend is `service:port (endpoints)`, or a resource backend's
// group, kind and name.
func ingressBackend(ns string, b *networkingv1.IngressBackend, dc *describeContext) string {
	switch {
	case b.Service != nil:
		port := b.Service.Port.Name
		if b.Service.Port.Number != 0 {
			port = strconv.Itoa(int(b.Service.Port.Number))
		}
		name := b.Service.Name + ":" + port
		svc := findService(dc.services, ns, b.Service.Name)
		if svc == nil {
			return name + " (<error: services \"" + b.Service.Name + "\" not found>)"
		}
		portName := ""
		for _, sp := range svc.Spec.Ports {
			if (b.Service.Port.Number != 0 && b.Service.Port.Number == sp.Port) || (b.Service.Port.Name != "" && b.Service.Port.Name == sp.Name) {
				portName = sp.Name
			}
		}
		return name + " (" + sliceEndpoints(dc.endpointSlices, ns, b.Service.Name, portName) + ")"
	case b.Resource != nil:
		group := table.None
		if b.Resource.APIGroup != nil {
			group = *b.Resource.APIGroup
		}
		return "APIGroup: " + group + ", Kind: " + b.Resource.Kind + ", Name: " + b.Resource.Name
	}
	return ""
}

func findService(svcs []*api.Service, ns, name string) *api.Service {
	for _, s := range svcs {
		if s.Namespace == ns && s.Name == name {
			return s
		}
	}
	return nil
}

// sliceEndpoints are the ready endpoints of a Service port as kubectl
// lists them from the EndpointSlices: three host:port, then how many
// more (counting every endpoint, as kubectl does); <none> without
// slices.
func sliceEndpoints(slices []*api.EndpointSlice, ns, service, portName string) string {
	var list []string
	count, more := 0, false
	add := func(e api.Endpoint, addr string) {
		if len(list) == maxDescribedEndpoints {
			more = true
		}
		if !more && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
			list = append(list, addr)
		}
		count++
	}
	found := false
	for _, es := range slices {
		if es.Namespace != ns || es.Labels[api.LabelServiceName] != service {
			continue
		}
		found = true
		if len(es.Ports) == 0 {
			for _, e := range es.Endpoints {
				if len(e.Addresses) > 0 {
					add(e, e.Addresses[0])
				}
			}
			continue
		}
		for _, p := range es.Ports {
			if p.Name == nil || *p.Name != portName || p.Port == nil {
				continue
			}
			for _, e := range es.Endpoints {
				if len(e.Addresses) > 0 {
					add(e, net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	if !found {
		return table.None
	}
	s := strings.Join(list, ",")
	if more {
		s += " + " + strconv.Itoa(count-maxDescribedEndpoints) + " more..."
	}
	return s
}

// maxDescribedEndpoints is how many endpoints a backend lists.
const maxDescribedEndpoints = 3

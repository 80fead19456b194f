package table

import (
	"strconv"
	"strings"

	"github.com/berth-dev/berth/api"
)

// ingressClass is kubectl's CLASS cell: the class the Ingress names.
func ingressClass(ing *api.Ingress) string {
	if ing.Spec.IngressClassName == nil {
		return "<none>"
	}
	return *ing.Spec.IngressClassName
}

// ingressHosts is kubectl's HOSTS cell: at most four hosts, then a count.
func ingressHosts(ing *api.Ingress) string {
	var hosts []string
	for _, r := range ing.Spec.Rules {
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	if len(hosts) > 4 {
		return strings.Join(hosts[:4], ",") + " + " + strconv.Itoa(len(hosts)-4) + " more..."
	}
	return strings.Join(hosts, ",")
}

// ingressAddress lists status.loadBalancer.ingress.
func ingressAddress(ing *api.Ingress) string {
	var out []string
	for _, a := range ing.Status.LoadBalancer.Ingress {
		out = append(out, a.IP+a.Hostname)
	}
	return strings.Join(out, ",")
}

// ingressPorts is kubectl's PORTS cell.
func ingressPorts(ing *api.Ingress) string {
	if len(ing.Spec.TLS) > 0 {
		return "80, 443"
	}
	return "80"
}

// ingressClassParameters is kubectl's PARAMETERS cell: kind.group/name.
func ingressClassParameters(ic *api.IngressClass) string {
	p := ic.Spec.Parameters
	if p == nil {
		return "<none>"
	}
	kind := p.Kind
	if p.APIGroup != nil && *p.APIGroup != "" {
		kind += "." + *p.APIGroup
	}
	return kind + "/" + p.Name
}

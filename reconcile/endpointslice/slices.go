package endpointslice

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/members"
)

// MaxEndpointsPerSlice is how many endpoints the controller puts in one
// slice: kube-controller-manager's default (--max-endpoints-per-slice).
const MaxEndpointsPerSlice = 100

// group is the endpoints of a service that share an address type and a
// set of ports, and so may share slices.
type group struct {
	addressType api.AddressType
	ports       []api.EndpointSlicePort
	// endpoints are sorted by address, then pod.
	endpoints []api.Endpoint
	// placeholder marks the group of a service with no endpoints at all,
	// which keeps one empty slice, as Kubernetes does, so that readers see
	// the service is served and empty.
	placeholder bool
}

func (g *group) key() string { return groupKey(g.addressType, g.ports) }

// groups sorts a service's Members into groups: one endpoint per member
// and address family of its pod's IPs, with the member's ports. zone
// returns the zone of a node, empty for none.
//
// Two rules, shared with the Endpoints, depart from Kubernetes'
// controller: a pod with none of the service's ports is left out, where
// Kubernetes keeps it in a slice without ports, so that the slices and
// the Endpoints hold the same pods; and an endpoint's hostname falls back
// to its pod's name when that is a DNS label (members.Hostname), for
// berth's DNS.
func groups(svc *api.Service, members []members.Member, zone func(node string) string) []*group {
	appProtocols := map[string]*string{}
	for _, sp := range svc.Spec.Ports {
		appProtocols[sp.Name] = sp.AppProtocol
	}
	byKey := map[string]*group{}
	for _, m := range members {
		ports := slicePorts(m.Ports, appProtocols)
		for at, ip := range familyIPs(m.Pod) {
			k := groupKey(at, ports)
			g := byKey[k]
			if g == nil {
				g = &group{addressType: at, ports: ports}
				byKey[k] = g
			}
			g.endpoints = append(g.endpoints, endpoint(m, ip, zone))
		}
	}
	if len(byKey) == 0 {
		// Kubernetes gives the placeholder the service's first IP family.
		// A berth service has none (no cluster IP, and no ipFamilies to
		// ask for one), so it is IPv4, Kubernetes' choice for a service
		// that is not IPv6.
		return []*group{{addressType: api.AddressTypeIPv4, placeholder: true}}
	}
	out := slices.Collect(maps.Values(byKey))
	slices.SortFunc(out, func(a, b *group) int { return strings.Compare(a.key(), b.key()) })
	for _, g := range out {
		slices.SortFunc(g.endpoints, compareEndpoints)
	}
	return out
}

// familyIPs returns a pod's first IP of each family, as Kubernetes'
// controller picks the address of each slice type from podIPs.
func familyIPs(pod *api.Pod) map[api.AddressType]string {
	ips := []string{pod.Status.PodIP}
	for _, p := range pod.Status.PodIPs {
		ips = append(ips, p.IP)
	}
	out := map[api.AddressType]string{}
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		at := api.AddressTypeIPv6
		if ip.Is4() {
			at = api.AddressTypeIPv4
		}
		if _, ok := out[at]; !ok {
			out[at] = s
		}
	}
	return out
}

// endpoint is a member's endpoint at one of its addresses. Its hostname
// is the Endpoints address's, under which berth's DNS publishes it: none
// for a pod without spec.hostname whose name is no DNS label
// (members.Hostname).
func endpoint(m members.Member, ip string, zone func(string) string) api.Endpoint {
	ready, serving, terminating := m.Ready, m.Serving, m.Terminating
	e := api.Endpoint{
		Addresses:  []string{ip},
		Conditions: api.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
	}
	if h := m.Address.Hostname; h != "" {
		e.Hostname = &h
	}
	if ref := m.Address.TargetRef; ref != nil {
		r := *ref
		e.TargetRef = &r
	}
	if n := m.Address.NodeName; n != nil {
		node := *n
		e.NodeName = &node
		if z := zone(node); z != "" {
			e.Zone = &z
		}
	}
	return e
}

// slicePorts turns a member's resolved ports into a slice's, with the
// appProtocol of the service port of each name.
func slicePorts(ports []api.EndpointPort, appProtocols map[string]*string) []api.EndpointSlicePort {
	if len(ports) == 0 {
		return nil
	}
	out := make([]api.EndpointSlicePort, len(ports))
	for i, p := range ports {
		name, proto, port := p.Name, p.Protocol, p.Port
		out[i] = api.EndpointSlicePort{Name: &name, Protocol: &proto, Port: &port}
		if ap := appProtocols[p.Name]; ap != nil {
			a := *ap
			out[i].AppProtocol = &a
		}
	}
	return out
}

// groupKey names an address type and a set of ports, in their order.
func groupKey(at api.AddressType, ports []api.EndpointSlicePort) string {
	var b strings.Builder
	b.WriteString(string(at))
	for _, p := range ports {
		b.WriteByte('\x00')
		b.WriteString(ptr.Deref(p.Name, ""))
		b.WriteByte('/')
		b.WriteString(string(ptr.Deref(p.Protocol, "")))
		b.WriteByte('/')
		if p.Port != nil {
			b.WriteString(strconv.Itoa(int(*p.Port)))
		}
		b.WriteByte('/')
		b.WriteString(ptr.Deref(p.AppProtocol, ""))
	}
	return b.String()
}

// endpointKey names an endpoint within its group: its address and its pod,
// since the pods of the exec runtime share their node's IP.
func endpointKey(e *api.Endpoint) string {
	var b strings.Builder
	if len(e.Addresses) > 0 {
		b.WriteString(e.Addresses[0])
	}
	if r := e.TargetRef; r != nil {
		b.WriteByte('\x00')
		b.WriteString(r.Namespace)
		b.WriteByte('/')
		b.WriteString(r.Name)
	}
	return b.String()
}

func compareEndpoints(a, b api.Endpoint) int {
	return cmp.Compare(endpointKey(&a), endpointKey(&b))
}

// writes are what make a service's slices what they should be.
type writes struct {
	create, update, delete []*api.EndpointSlice
}

func (w *writes) empty() bool { return len(w.create)+len(w.update)+len(w.delete) == 0 }

// slot is an existing slice kept for a group, with the endpoints it will
// hold.
type slot struct {
	slice     *api.EndpointSlice
	endpoints []api.Endpoint
	changed   bool
}

// plan computes the writes that turn a service's existing slices into
// want, moving as little as it can, as Kubernetes' reconciler does: an
// endpoint stays in the slice that holds it (its conditions brought up to
// date), one that went leaves its slice, and new ones go first into whole
// new slices of MaxEndpointsPerSlice, then into slices that change anyway,
// then into the fullest unchanged slice they fit in, and last into a new
// slice. A slice left empty is deleted, or given to a new group of its
// address type rather than deleting one slice and creating another.
// Nothing is written for a slice that already holds what it should. With
// svc nil (the service is gone or keeps no slices), every slice goes.
func plan(svc *api.Service, existing []*api.EndpointSlice, want []*group) writes {
	var w writes
	if svc == nil {
		w.delete = existing
		return w
	}
	existing = slices.Clone(existing)
	slices.SortFunc(existing, func(a, b *api.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	byKey := map[string]*group{}
	pending := map[string]map[string]*api.Endpoint{}
	for _, g := range want {
		k := g.key()
		byKey[k] = g
		p := make(map[string]*api.Endpoint, len(g.endpoints))
		for i := range g.endpoints {
			p[endpointKey(&g.endpoints[i])] = &g.endpoints[i]
		}
		pending[k] = p
	}
	slots := map[string][]*slot{}
	var spare []*api.EndpointSlice
	for _, es := range existing {
		k := groupKey(es.AddressType, es.Ports)
		g := byKey[k]
		if g == nil {
			spare = append(spare, es)
			continue
		}
		s := &slot{slice: es}
		for i := range es.Endpoints {
			ek := endpointKey(&es.Endpoints[i])
			if d, ok := pending[k][ek]; ok {
				s.endpoints = append(s.endpoints, *d)
				delete(pending[k], ek)
			}
		}
		if len(s.endpoints) == 0 && !(g.placeholder && len(slots[k]) == 0) {
			spare = append(spare, es)
			continue
		}
		s.changed = !equality.Semantic.DeepEqual(s.endpoints, es.Endpoints)
		slots[k] = append(slots[k], s)
	}
	newSlice := func(g *group, eps []api.Endpoint) {
		for i, es := range spare {
			if es.AddressType == g.addressType {
				spare = slices.Delete(spare, i, i+1)
				slots[g.key()] = append(slots[g.key()], &slot{slice: es, endpoints: eps, changed: true})
				return
			}
		}
		es := &api.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: svc.Namespace, GenerateName: svc.Name + "-"},
			AddressType: g.addressType,
		}
		slots[g.key()] = append(slots[g.key()], &slot{slice: es, endpoints: eps, changed: true})
	}
	for _, g := range want {
		k := g.key()
		var rest []api.Endpoint
		for _, e := range g.endpoints {
			if _, ok := pending[k][endpointKey(&e)]; ok {
				rest = append(rest, e)
			}
		}
		for len(rest) >= MaxEndpointsPerSlice {
			newSlice(g, rest[:MaxEndpointsPerSlice:MaxEndpointsPerSlice])
			rest = rest[MaxEndpointsPerSlice:]
		}
		for _, s := range slots[k] {
			if len(rest) == 0 {
				break
			}
			if s.changed && len(s.endpoints) < MaxEndpointsPerSlice {
				n := min(len(rest), MaxEndpointsPerSlice-len(s.endpoints))
				s.endpoints = append(s.endpoints, rest[:n]...)
				rest = rest[n:]
			}
		}
		if len(rest) > 0 {
			var best *slot
			for _, s := range slots[k] {
				if !s.changed && len(s.endpoints)+len(rest) <= MaxEndpointsPerSlice && (best == nil || len(s.endpoints) > len(best.endpoints)) {
					best = s
				}
			}
			if best != nil {
				best.endpoints = append(best.endpoints, rest...)
			} else {
				newSlice(g, rest)
			}
		}
		if g.placeholder && len(slots[k]) == 0 {
			newSlice(g, nil)
		}
	}
	labels := members.ServiceLabels(svc, map[string]string{api.LabelServiceName: svc.Name, api.LabelManagedBy: ManagedBy})
	owners := members.OwnedBy(svc)
	for _, g := range want {
		for _, s := range slots[g.key()] {
			es := desired(s.slice, g, s.endpoints, labels, owners)
			switch {
			case es.Name == "":
				w.create = append(w.create, es)
			case !sameSlice(s.slice, es):
				w.update = append(w.update, es)
			}
		}
	}
	w.delete = spare
	return w
}

// desired is a slice as it should be: a copy of the stored one (or of the
// new one) with the service's labels and owner, and the group's ports and
// the endpoints given.
func desired(es *api.EndpointSlice, g *group, eps []api.Endpoint, labels map[string]string, owners []metav1.OwnerReference) *api.EndpointSlice {
	out := es.DeepCopyObject().(*api.EndpointSlice)
	out.SetGroupVersionKind(api.DiscoveryV1.WithKind("EndpointSlice"))
	out.Labels = maps.Clone(labels)
	out.OwnerReferences = owners
	out.AddressType = g.addressType
	out.Ports = g.ports
	out.Endpoints = eps
	return out
}

// sameSlice reports whether a stored slice already holds what want says;
// an empty list and a missing one are the same, as they are once stored
// as JSON.
func sameSlice(have, want *api.EndpointSlice) bool {
	return maps.Equal(have.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences) &&
		have.AddressType == want.AddressType &&
		(len(have.Ports) == 0 && len(want.Ports) == 0 || equality.Semantic.DeepEqual(have.Ports, want.Ports)) &&
		(len(have.Endpoints) == 0 && len(want.Endpoints) == 0 || equality.Semantic.DeepEqual(have.Endpoints, want.Endpoints))
}

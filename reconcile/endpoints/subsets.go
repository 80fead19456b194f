package endpoints

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-dev/berth/api"
)

// Subsets computes the subsets of a service's Endpoints from the pods in its
// namespace, as the Kubernetes endpoints controller does: the Members of
// the service, terminating ones only when it publishes not-ready
// addresses. Addresses that share a set of ports share a subset. The
// result is canonical (sorted), so that equal inputs give equal outputs
// and a stored object is rewritten only when something changed.
//
// pods need not be filtered by the selector: Subsets skips the pods it
// does not select. A service without a selector has no subsets.
func Subsets(svc *api.Service, pods []*api.Pod) []api.EndpointSubset {
	return repack(Members(svc, pods, svc.Spec.PublishNotReadyAddresses))
}

// Member is one pod's part in a service's endpoints: the Endpoints and the
// EndpointSlices of the service are both made of its Members, so they
// never disagree.
type Member struct {
	// Pod is the pod behind the endpoint.
	Pod *api.Pod
	// Address is its address in the Endpoints.
	Address api.EndpointAddress
	// Ports are the service's ports resolved for the pod, sorted; none
	// for a headless service without ports.
	Ports []api.EndpointPort
	// Ready, Serving and Terminating are the endpoint's conditions, as
	// Kubernetes sets them on an EndpointSlice: the pod is being deleted
	// (Terminating), its Ready condition is True (Serving), and it should
	// take new traffic (Ready: serving and not terminating, or the service
	// publishes not-ready addresses).
	Ready, Serving, Terminating bool
}

// Members lists the pods a service's endpoints are made of, in the order
// of pods: a pod takes part when the service selects it, it has an IP, has
// not finished, and is not being deleted (unless includeTerminating);
// each service port is resolved per pod from its targetPort, and a pod
// whose containers lack a named port is left out of that port alone (and
// altogether when it has none of them).
func Members(svc *api.Service, pods []*api.Pod, includeTerminating bool) []Member {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	publishNotReady := svc.Spec.PublishNotReadyAddresses
	var members []Member
	for _, pod := range pods {
		if pod.Namespace != svc.Namespace || !Selects(svc.Spec.Selector, pod.Labels) || !inEndpoints(pod, includeTerminating) {
			continue
		}
		serving, terminating := pod.Ready(), pod.DeletionTimestamp != nil
		m := Member{
			Pod: pod, Address: address(pod),
			Ready: publishNotReady || (serving && !terminating), Serving: serving, Terminating: terminating,
		}
		if len(svc.Spec.Ports) == 0 {
			// A headless service without ports still lists its addresses.
			members = append(members, m)
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, ok := resolvePort(pod, sp)
			if !ok {
				continue
			}
			m.Ports = append(m.Ports, api.EndpointPort{Name: sp.Name, Port: port, Protocol: protocol(sp.Protocol)})
		}
		if len(m.Ports) > 0 {
			slices.SortFunc(m.Ports, comparePorts)
			m.Ports = slices.CompactFunc(m.Ports, func(a, b api.EndpointPort) bool { return comparePorts(a, b) == 0 })
			members = append(members, m)
		}
	}
	return members
}

// Selects reports whether a service selector selects a set of labels: every
// key of the selector must be present with the same value. An empty
// selector selects nothing, as for Services.
func Selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// inEndpoints reports whether a pod may appear in endpoints at all.
func inEndpoints(pod *api.Pod, includeTerminating bool) bool {
	if pod.Status.PodIP == "" {
		return false
	}
	if pod.DeletionTimestamp != nil && !includeTerminating {
		return false
	}
	return pod.Status.Phase != api.PodSucceeded && pod.Status.Phase != api.PodFailed
}

// Hostname is the name a pod answers to under its service in DNS:
// spec.hostname, else the pod's name (SPEC §6). Kubernetes sets an
// address's hostname only from spec.hostname, when the pod's subdomain
// names the service; berth publishes its endpoints under their pods'
// names too. A hostname is a DNS label and a pod's name need not be one
// (web.v1, or longer than 63 characters): such a pod gets none, which
// keeps the Endpoints and slices valid, and DNS names it by its IP with
// dashes, as any endpoint without a hostname.
func Hostname(pod *api.Pod) string {
	if pod.Spec.Hostname != "" {
		return pod.Spec.Hostname
	}
	if len(validation.IsDNS1123Label(pod.Name)) > 0 {
		return ""
	}
	return pod.Name
}

// address is a pod's endpoint address. Like Kubernetes since 1.24 the
// target reference carries no resourceVersion: it would change with every
// write to the pod and rewrite the Endpoints for nothing.
func address(pod *api.Pod) api.EndpointAddress {
	a := api.EndpointAddress{
		IP:       pod.Status.PodIP,
		Hostname: Hostname(pod),
		TargetRef: &api.ObjectReference{
			Kind:      "Pod",
			Namespace: pod.Namespace,
			Name:      pod.Name,
			UID:       string(pod.UID),
		},
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		a.NodeName = &node
	}
	return a
}

func protocol(p api.Protocol) api.Protocol {
	if p == "" {
		return api.ProtocolTCP
	}
	return p
}

// resolvePort finds the port a service port reaches on a pod: a numeric
// targetPort as is (the service port when unset), a named one by the
// container port of that name and protocol.
func resolvePort(pod *api.Pod, sp *api.ServicePort) (int32, bool) {
	tp := sp.TargetPort
	switch {
	case tp.Type == intstr.String && tp.StrVal != "":
		proto := protocol(sp.Protocol)
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == tp.StrVal && protocol(cp.Protocol) == proto {
					return cp.ContainerPort, true
				}
			}
		}
		// Kubernetes also accepts a number spelled as a string.
		if n, err := strconv.ParseInt(tp.StrVal, 10, 32); err == nil && n > 0 {
			return int32(n), true
		}
		return 0, false
	case tp.Type == intstr.Int && tp.IntVal > 0:
		return tp.IntVal, true
	default:
		return sp.Port, sp.Port > 0
	}
}

// repack groups addresses by the set of ports they serve, one subset per
// set, everything sorted: Kubernetes' RepackSubsets.
func repack(members []Member) []api.EndpointSubset {
	if len(members) == 0 {
		return nil
	}
	type group struct {
		key    string
		subset api.EndpointSubset
	}
	var groups []*group
	byKey := map[string]*group{}
	for i := range members {
		m := &members[i]
		key := portsKey(m.Ports)
		g := byKey[key]
		if g == nil {
			g = &group{key: key, subset: api.EndpointSubset{Ports: m.Ports}}
			byKey[key] = g
			groups = append(groups, g)
		}
		if m.Ready {
			g.subset.Addresses = append(g.subset.Addresses, m.Address)
		} else {
			g.subset.NotReadyAddresses = append(g.subset.NotReadyAddresses, m.Address)
		}
	}
	slices.SortFunc(groups, func(a, b *group) int { return strings.Compare(a.key, b.key) })
	out := make([]api.EndpointSubset, len(groups))
	for i, g := range groups {
		slices.SortFunc(g.subset.Addresses, compareAddresses)
		slices.SortFunc(g.subset.NotReadyAddresses, compareAddresses)
		out[i] = g.subset
	}
	return out
}

func comparePorts(a, b api.EndpointPort) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), strings.Compare(string(a.Protocol), string(b.Protocol)))
}

func portsKey(ports []api.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(p.Name)
		b.WriteByte('\x00')
		b.WriteString(strconv.Itoa(int(p.Port)))
		b.WriteByte('/')
		b.WriteString(string(p.Protocol))
		b.WriteByte('\x00')
	}
	return b.String()
}

// compareAddresses orders by IP, then by pod: pods of the exec runtime
// share their node's IP, so the IP alone does not name an endpoint.
func compareAddresses(a, b api.EndpointAddress) int {
	return cmp.Or(strings.Compare(a.IP, b.IP), strings.Compare(refName(a), refName(b)), strings.Compare(a.Hostname, b.Hostname))
}

func refName(a api.EndpointAddress) string {
	if a.TargetRef == nil {
		return ""
	}
	return a.TargetRef.Namespace + "/" + a.TargetRef.Name
}

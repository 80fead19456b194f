package members

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// LabelHeadless marks what is kept for a service with clusterIP None (its
// Endpoints, its EndpointSlices), as Kubernetes does.
const LabelHeadless = "service.kubernetes.io/headless"

var podKind = api.MustLookupResource("pods")

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

// Of lists the pods a service's endpoints are made of, in the order
// of pods: a pod takes part when the service selects it, it has an IP, has
// not finished, and is not being deleted (unless includeTerminating);
// each service port is resolved per pod from its targetPort, and a pod
// whose containers lack a named port is left out of that port alone (and
// altogether when it has none of them).
func Of(svc *api.Service, pods []*api.Pod, includeTerminating bool) []Member {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	publishNotReady := svc.Spec.PublishNotReadyAddresses
	var members []Member
	for _, pod := range pods {
		if pod.Namespace != svc.Namespace || !selects(svc.Spec.Selector, pod.Labels) || !inEndpoints(pod, includeTerminating) {
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

// selects reports whether a service selector selects a set of labels: every
// key of the selector must be present with the same value. An empty
// selector selects nothing, as for Services.
func selects(selector, labels map[string]string) bool {
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

func comparePorts(a, b api.EndpointPort) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), strings.Compare(string(a.Protocol), string(b.Protocol)))
}

// SelectedPods reads the pods a service selects from a snapshot.
func SelectedPods(snap *store.Snapshot, svc *api.Service) ([]*api.Pod, error) {
	var pods []*api.Pod
	err := snap.Each(podKind, store.Filter{Namespace: svc.Namespace}, func(o api.Object) bool {
		if pod := o.(*api.Pod); selects(svc.Spec.Selector, pod.Labels) {
			pods = append(pods, pod)
		}
		return true
	})
	return pods, err
}

// ServiceLabels are the labels of what a controller keeps for a service,
// as Kubernetes sets them: the service's own, the headless mark for a
// service with clusterIP None, and the controller's marks over them.
func ServiceLabels(svc *api.Service, marks map[string]string) map[string]string {
	lbls := make(map[string]string, len(svc.Labels)+len(marks)+1)
	maps.Copy(lbls, svc.Labels)
	if svc.Spec.ClusterIP == api.ClusterIPNone {
		lbls[LabelHeadless] = ""
	} else {
		delete(lbls, LabelHeadless)
	}
	maps.Copy(lbls, marks)
	return lbls
}

// OwnedBy is the owner reference of what a controller keeps for a
// service: the service controls it, and garbage collection removes it
// with the service.
func OwnedBy(svc *api.Service) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{
		APIVersion:         "v1",
		Kind:               "Service",
		Name:               svc.Name,
		UID:                svc.UID,
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}}
}

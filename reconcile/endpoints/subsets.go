package endpoints

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/members"
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
	return repack(members.Of(svc, pods, svc.Spec.PublishNotReadyAddresses))
}

// repack groups addresses by the set of ports they serve, one subset per
// set, everything sorted: Kubernetes' RepackSubsets.
func repack(ms []members.Member) []api.EndpointSubset {
	if len(ms) == 0 {
		return nil
	}
	type group struct {
		key    string
		subset api.EndpointSubset
	}
	var groups []*group
	byKey := map[string]*group{}
	for i := range ms {
		m := &ms[i]
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

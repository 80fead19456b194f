package podnet

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"github.com/berth-dev/berth/api"
)

// Route sends the pods of one node to it.
type Route struct {
	// Node is the node the route leads to.
	Node string
	// Dst is the node's podCIDR; Via its InternalIP.
	Dst netip.Prefix
	Via netip.Addr
}

// String reads as `ip route` writes it.
func (r Route) String() string { return fmt.Sprintf("%s via %s (node %s)", r.Dst, r.Via, r.Node) }

// Skipped says why a node gets no route.
type Skipped struct {
	Node   string
	Reason string
}

// WantRoutes is the routing's pure core: the route to each node's podCIDR
// but self's, via its InternalIP. A node without either, with one that does
// not parse, of another family than its podCIDR, or whose podCIDR
// overlaps self's or an earlier node's (by name) gets none, and is
// listed in skipped with why.
func WantRoutes(self string, nodes []*api.Node) (routes []Route, skipped []Skipped) {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b *api.Node) int { return cmp.Compare(a.Name, b.Name) })
	var taken []Route
	for _, n := range nodes {
		if n.Name != self {
			continue
		}
		if p, err := netip.ParsePrefix(n.Spec.PodCIDR); err == nil {
			taken = append(taken, Route{Node: n.Name, Dst: p.Masked()})
		}
	}
	skip := func(n *api.Node, format string, args ...any) {
		skipped = append(skipped, Skipped{Node: n.Name, Reason: fmt.Sprintf(format, args...)})
	}
	for _, n := range nodes {
		if n.Name == self {
			continue
		}
		if n.Spec.PodCIDR == "" {
			skip(n, "no spec.podCIDR")
			continue
		}
		dst, err := netip.ParsePrefix(n.Spec.PodCIDR)
		if err != nil {
			skip(n, "spec.podCIDR %q is not a CIDR", n.Spec.PodCIDR)
			continue
		}
		dst = dst.Masked()
		via, ok := internalIP(n)
		if !ok {
			skip(n, "no InternalIP address in status.addresses")
			continue
		}
		if via.Is4() != dst.Addr().Is4() {
			skip(n, "InternalIP %s is not of spec.podCIDR %s's family", via, dst)
			continue
		}
		if i := slices.IndexFunc(taken, func(r Route) bool { return r.Dst.Overlaps(dst) }); i >= 0 {
			skip(n, "spec.podCIDR %s overlaps node %s's", dst, taken[i].Node)
			continue
		}
		r := Route{Node: n.Name, Dst: dst, Via: via}
		taken = append(taken, r)
		routes = append(routes, r)
	}
	return routes, skipped
}

// internalIP is the node's first InternalIP that parses.
func internalIP(n *api.Node) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if a.Type != api.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

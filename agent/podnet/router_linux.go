package podnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RouteProtocol marks the routes berth makes (rtm_protocol, shown by
// `ip route` as "proto 157"), so that it changes and removes those and
// never one it did not make. The kernel gives no meaning to numbers past
// RTPROT_STATIC (4); 157 is listed in no iproute2 rt_protos.
const RouteProtocol netlink.RouteProtocol = 157

// Router keeps the main routing table's berth routes equal to a list.
type Router struct {
	h *netlink.Handle
}

// NewRouter works in the network namespace of h; a nil h is the
// process's own.
func NewRouter(h *netlink.Handle) *Router {
	if h == nil {
		h = &netlink.Handle{}
	}
	return &Router{h: h}
}

// Sync makes the berth routes of the main table exactly want: it replaces
// the wanted ones (so a route whose gateway changed moves) and deletes
// the other berth routes. Routes of any other protocol are left alone,
// even to a wanted destination: the kernel refuses such a route, and the
// error says which.
func (r *Router) Sync(want []Route) error {
	have, err := r.list()
	if err != nil {
		return err
	}
	wanted := map[netip.Prefix]bool{}
	var errs []error
	for _, w := range want {
		wanted[w.Dst] = true
		if err := r.h.RouteReplace(nlRoute(w.Dst, w.Via)); err != nil {
			errs = append(errs, fmt.Errorf("route %s: %w", w, err))
		}
	}
	for _, h := range have {
		dst, ok := prefixOf(h.Dst)
		if ok && wanted[dst] {
			continue
		}
		if err := r.h.RouteDel(&h); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("delete route %s: %w", h.Dst, err))
		}
	}
	return errors.Join(errs...)
}

// Cleanup deletes every berth route.
func (r *Router) Cleanup() error { return r.Sync(nil) }

// list is the berth routes of the main table, of both families.
func (r *Router) list() ([]netlink.Route, error) {
	filter := &netlink.Route{Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}
	routes, err := r.h.RouteListFiltered(netlink.FAMILY_ALL, filter, netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	return routes, nil
}

func nlRoute(dst netip.Prefix, via netip.Addr) *netlink.Route {
	return &netlink.Route{
		Dst:      &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(dst.Bits(), dst.Addr().BitLen())},
		Gw:       via.AsSlice(),
		Protocol: RouteProtocol,
		Table:    unix.RT_TABLE_MAIN,
	}
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), bits), true
}

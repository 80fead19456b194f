package dns

import (
	"net"
	"net/netip"
	"slices"

	"github.com/miekg/dns"
)

// Who is answered what. Names in the zone are answered to anyone who can
// reach the server. Names outside it are forwarded only for clients in
// the recursion networks (by default loopback and this machine's
// addresses; berth server adds the cluster CIDR) and for the addresses
// of the cluster's Nodes, which the follower keeps: to anyone else they are
// REFUSED, as CoreDNS's acl plugin refuses, so that a server reachable
// from outside is no open resolver for others to use or to reflect floods
// off.

// asker is who asked a question, and how.
type asker struct {
	udp  bool
	from netip.Addr
	// recurse says names outside the zone are forwarded for the asker.
	recurse bool
	cookie  cookie
}

// askerOf is the asker of a request that came through w.
func (h *Handler) askerOf(w dns.ResponseWriter) asker {
	a := asker{udp: isUDP(w), from: clientOf(w)}
	a.recurse = h.recurses(a.from)
	return a
}

// clientOf is the address a request came from: the invalid address when
// it cannot be told.
func clientOf(w dns.ResponseWriter) netip.Addr {
	if uw, ok := w.(*udpWriter); ok {
		return uw.peer.Addr().Unmap()
	}
	switch a := w.RemoteAddr().(type) {
	case *net.UDPAddr:
		return a.AddrPort().Addr().Unmap()
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// recurses reports whether names outside the zone are forwarded for a
// client: every client when the handler has no recursion networks, else
// those in them and the cluster's Nodes (whose agents forward their pods'
// questions).
func (h *Handler) recurses(from netip.Addr) bool {
	if h.recursion == nil {
		return true
	}
	from = from.WithZone("")
	return slices.ContainsFunc(h.recursion, func(p netip.Prefix) bool { return p.Contains(from) }) || h.table.isNode(from)
}

// LocalNetworks are the clients a server forwards for by default: the
// loopback networks and this machine's own addresses, each alone.
func LocalNetworks() []netip.Prefix {
	nets := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nets
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok || ip.IsLoopback() {
			continue
		}
		ip = ip.Unmap()
		nets = append(nets, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return nets
}

package servicealloc

import (
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Defaults, as k3s's flags.
const (
	DefaultServiceCIDR   = "10.43.0.0/16"
	DefaultNodePortRange = "30000-32767"
)

// maxRangeBits bounds the part of a service CIDR addresses are drawn
// from (2^20), as Kubernetes bounds an IPv6 service CIDR's.
const maxRangeBits = 20

// CIDR is one family's service range.
type CIDR struct {
	prefix netip.Prefix
	// size is how many addresses are handed out: all but the network
	// address and, for IPv4, the broadcast one.
	size int64
}

// ParseCIDRs reads --service-cidr: one range, or two of different
// families for dual-stack services, separated by a comma; the first is
// the primary family.
func ParseCIDRs(v string) ([]CIDR, error) {
	var out []CIDR
	for s := range strings.SplitSeq(v, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("service CIDR %q: %w", s, err)
		}
		p = p.Masked()
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("service CIDR %q: an IPv4-mapped IPv6 range; write the IPv4 range", s)
		}
		hostBits := p.Addr().BitLen() - p.Bits()
		if hostBits < 2 {
			return nil, fmt.Errorf("service CIDR %s: too small, want at least 4 addresses", p)
		}
		if hostBits > maxRangeBits {
			hostBits = maxRangeBits
		}
		size := int64(1)<<hostBits - 1
		if p.Addr().Is4() && p.Addr().BitLen()-p.Bits() <= maxRangeBits {
			size-- // the broadcast address
		}
		for _, c := range out {
			if c.prefix.Addr().Is4() == p.Addr().Is4() {
				return nil, fmt.Errorf("service CIDRs %s and %s: want at most one of each IP family", c.prefix, p)
			}
		}
		out = append(out, CIDR{prefix: p, size: size})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("service CIDR: none given")
	}
	return out, nil
}

// String is the range.
func (c CIDR) String() string { return c.prefix.String() }

// Family is the range's IP family.
func (c CIDR) Family() corev1.IPFamily { return familyOf(c.prefix.Addr()) }

// First is the range's first address, which the kubernetes Service holds.
func (c CIDR) First() netip.Addr { return c.nth(0) }

// nth is the i-th address handed out, counted from the one after the
// network address.
func (c CIDR) nth(i int64) netip.Addr {
	n := new(big.Int).SetBytes(c.prefix.Addr().AsSlice())
	n.Add(n, big.NewInt(i+1))
	buf := make([]byte, c.prefix.Addr().BitLen()/8)
	n.FillBytes(buf)
	a, _ := netip.AddrFromSlice(buf)
	return a
}

// contains tells whether a is an address the range hands out.
func (c CIDR) contains(a netip.Addr) bool {
	if !c.prefix.Contains(a) || a == c.prefix.Addr() {
		return false
	}
	n := new(big.Int).SetBytes(a.AsSlice())
	n.Sub(n, new(big.Int).SetBytes(c.prefix.Addr().AsSlice()))
	return n.Cmp(big.NewInt(c.size)) <= 0
}

func familyOf(a netip.Addr) corev1.IPFamily {
	if a.Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// PortRange is the node port range, both ends included.
type PortRange struct{ Base, Size int32 }

// ParsePortRange reads --service-node-port-range, "30000-32767".
func ParsePortRange(v string) (PortRange, error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(v), "-")
	if !ok {
		hi = lo
	}
	l, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	h, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
	if err1 != nil || err2 != nil || l == 0 || h < l {
		return PortRange{}, fmt.Errorf("node port range %q: want FIRST-LAST, two ports with FIRST <= LAST", v)
	}
	return PortRange{Base: int32(l), Size: int32(h-l) + 1}, nil
}

// String is the range as the flag reads it.
func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Base, r.Base+r.Size-1) }

func (r PortRange) contains(p int32) bool { return p >= r.Base && p < r.Base+r.Size }

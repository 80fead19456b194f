package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
)

// Defaults, as k3s's and kube-controller-manager's flags.
const (
	DefaultClusterCIDR  = "10.42.0.0/16"
	DefaultNodeMaskSize = 24
)

// maxSubnetBits bounds how many node ranges a cluster CIDR is cut into
// (2^16), as kube-controller-manager's cidrset does, so the allocator's
// state stays small.
const maxSubnetBits = 16

// Range is a cluster CIDR cut into node ranges of one size.
type Range struct {
	cidr     netip.Prefix
	maskSize int
	size     int
}

// NewRange cuts cidr into ranges of maskSize bits.
func NewRange(cidr string, maskSize int) (*Range, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("cluster CIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	if p.Addr().Is4In6() {
		return nil, fmt.Errorf("cluster CIDR %q: an IPv4-mapped IPv6 range; write the IPv4 range", cidr)
	}
	bits := p.Addr().BitLen()
	switch {
	case maskSize < p.Bits():
		return nil, fmt.Errorf("node CIDR mask size %d is shorter than the cluster CIDR %s's", maskSize, p)
	case maskSize > bits:
		return nil, fmt.Errorf("node CIDR mask size %d is longer than an address (%d bits)", maskSize, bits)
	case maskSize-p.Bits() > maxSubnetBits:
		return nil, fmt.Errorf("node CIDR mask size %d cuts the cluster CIDR %s into more than 2^%d ranges", maskSize, p, maxSubnetBits)
	}
	return &Range{cidr: p, maskSize: maskSize, size: 1 << (maskSize - p.Bits())}, nil
}

// String is the cluster CIDR.
func (r *Range) String() string { return r.cidr.String() }

// Size is how many node ranges there are.
func (r *Range) Size() int { return r.size }

// Subnet is the i-th node range, counted from the cluster CIDR's first
// address.
func (r *Range) Subnet(i int) netip.Prefix {
	hostBits := uint(r.cidr.Addr().BitLen() - r.maskSize)
	n := new(big.Int).SetBytes(r.cidr.Addr().AsSlice())
	n.Add(n, new(big.Int).Lsh(big.NewInt(int64(i)), hostBits))
	buf := make([]byte, r.cidr.Addr().BitLen()/8)
	n.FillBytes(buf)
	a, _ := netip.AddrFromSlice(buf)
	return netip.PrefixFrom(a, r.maskSize)
}

// index is the number of the node range holding a, which the cluster CIDR
// holds.
func (r *Range) index(a netip.Addr) int {
	hostBits := uint(a.BitLen() - r.maskSize)
	n := new(big.Int).SetBytes(a.AsSlice())
	n.Sub(n, new(big.Int).SetBytes(r.cidr.Addr().AsSlice()))
	return int(n.Rsh(n, hostBits).Int64())
}

// covers returns the numbers of the node ranges p overlaps, or an error if
// p does not lie inside the cluster CIDR.
func (r *Range) covers(p netip.Prefix) (first, last int, err error) {
	p = p.Masked()
	if p.Addr().Is4In6() {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	if p.Addr().BitLen() != r.cidr.Addr().BitLen() || p.Bits() < r.cidr.Bits() || !r.cidr.Contains(p.Addr()) {
		return 0, 0, fmt.Errorf("%s is outside the cluster CIDR %s", p, r.cidr)
	}
	first = r.index(p.Addr())
	if p.Bits() >= r.maskSize {
		return first, first, nil
	}
	return first, first + 1<<(r.maskSize-p.Bits()) - 1, nil
}

// Node is what the allocator needs of a Node: its name and the podCIDR it
// holds, if any.
type Node struct {
	Name    string
	PodCIDR string
}

// Plan is what Allocate decided.
type Plan struct {
	// Assign gives nodes without a podCIDR theirs.
	Assign map[string]netip.Prefix
	// Rejected names nodes whose podCIDR cannot be honoured (not a CIDR,
	// outside the cluster CIDR, or overlapping an earlier node's), and
	// nodes that need one when none is left, with why.
	Rejected map[string]error
}

// ErrExhausted is why a node gets no range when every one is taken.
var ErrExhausted = errors.New("no pod CIDR left")

// Allocate is the allocator's pure core. It takes the nodes in order of
// precedence (the oldest first): the ranges nodes hold are occupied in that
// order, a later node's overlapping an earlier one's is rejected, and then
// each node without one takes the lowest free range. Running it again on
// its result assigns nothing: the state is the nodes themselves, so an
// allocator that restarts, or another control plane that takes over,
// never hands a range out twice.
func (r *Range) Allocate(nodes []Node) Plan {
	plan := Plan{Assign: map[string]netip.Prefix{}, Rejected: map[string]error{}}
	used := make([]string, r.size) // node range number → holder
	for _, n := range nodes {
		if n.PodCIDR == "" {
			continue
		}
		p, err := netip.ParsePrefix(n.PodCIDR)
		if err != nil {
			plan.Rejected[n.Name] = fmt.Errorf("spec.podCIDR %q is not a CIDR", n.PodCIDR)
			continue
		}
		first, last, err := r.covers(p)
		if err != nil {
			plan.Rejected[n.Name] = fmt.Errorf("spec.podCIDR %s", err)
			continue
		}
		var holder string
		for i := first; i <= last && holder == ""; i++ {
			holder = used[i]
		}
		if holder != "" {
			plan.Rejected[n.Name] = fmt.Errorf("spec.podCIDR %s overlaps node %s's", p, holder)
			continue
		}
		for i := first; i <= last; i++ {
			used[i] = n.Name
		}
	}
	next := 0
	for _, n := range nodes {
		if n.PodCIDR != "" {
			continue
		}
		for next < r.size && used[next] != "" {
			next++
		}
		if next == r.size {
			plan.Rejected[n.Name] = fmt.Errorf("%w: the cluster CIDR %s holds %d ranges of /%d and every one is taken", ErrExhausted, r.cidr, r.size, r.maskSize)
			continue
		}
		used[next] = n.Name
		plan.Assign[n.Name] = r.Subnet(next)
	}
	return plan
}

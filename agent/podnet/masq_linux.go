package podnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"
)

// MasqTable is berth's nftables table (of family ip, or ip6 for an IPv6
// podCIDR), which holds the pod masquerade and nothing else: the agent
// replaces it whole and deletes it on Cleanup, and touches no other.
const MasqTable = "berth-podnet"

// masqSet names the table's set of every node's podCIDR.
const masqSet = "pod-cidrs"

// Masquerader keeps the pod masquerade: traffic from this node's podCIDR
// to an address outside every node's podCIDR (the nodes' LAN, the
// Internet) leaves with the node's address, as flannel's masquerade
// rules do; pod-to-pod traffic keeps its pod IPs.
type Masquerader struct {
	ns *netns.NsHandle
	// applied is what the table holds, as masqKey says.
	applied string
}

// NewMasquerader works in network namespace ns; nil is the process's own.
func NewMasquerader(ns *netns.NsHandle) *Masquerader { return &Masquerader{ns: ns} }

func (m *Masquerader) conn() (*nftables.Conn, error) {
	if m.ns == nil {
		return nftables.New()
	}
	return nftables.New(nftables.WithNetNSFd(int(*m.ns)))
}

func masqKey(own netip.Prefix, cluster []netip.Prefix) string {
	var b strings.Builder
	b.WriteString(own.String())
	for _, p := range cluster {
		b.WriteString(" " + p.String())
	}
	return b.String()
}

// Sync makes the table masquerade what leaves own for outside cluster; it
// writes only when that changed or the table is gone.
func (m *Masquerader) Sync(own netip.Prefix, cluster []netip.Prefix) error {
	own = own.Masked()
	cluster = mergePrefixes(append(slices.Clone(cluster), own), own.Addr().Is4())
	key := masqKey(own, cluster)
	c, err := m.conn()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	family := nftables.TableFamilyIPv4
	if !own.Addr().Is4() {
		family = nftables.TableFamilyIPv6
	}
	if key == m.applied {
		if _, err := c.ListTableOfFamily(MasqTable, family); err == nil {
			return nil
		}
	}
	t := &nftables.Table{Name: MasqTable, Family: family}
	// Added, deleted and added again in one transaction: the table is
	// replaced whole, or, when it was not there, made.
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	// The set's ID names it within this transaction; giving one keeps
	// AddSet from drawing it from the library's unguarded global counter,
	// which two Masqueraders (two namespaces) would race on.
	set := &nftables.Set{Table: t, ID: 1, Name: masqSet, Interval: true, KeyType: nftables.TypeIPAddr}
	if family == nftables.TableFamilyIPv6 {
		set.KeyType = nftables.TypeIP6Addr
	}
	if err := c.AddSet(set, intervalElements(cluster)); err != nil {
		return fmt.Errorf("nftables: set %s: %w", masqSet, err)
	}
	ch := c.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	saddr, daddr, size := uint32(12), uint32(16), uint32(4)
	if family == nftables.TableFamilyIPv6 {
		saddr, daddr, size = 8, 24, 16
	}
	mask := net.CIDRMask(own.Bits(), own.Addr().BitLen())
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: saddr, Len: size},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: size, Mask: mask, Xor: make([]byte, size)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: own.Addr().AsSlice()},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: daddr, Len: size},
		&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID, Invert: true},
		&expr.Masq{},
	}})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: table %s: %w", MasqTable, err)
	}
	m.applied = key
	return nil
}

// Cleanup deletes berth's tables of both families.
func (m *Masquerader) Cleanup() error {
	c, err := m.conn()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	var errs []error
	for _, f := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		c.DelTable(&nftables.Table{Name: MasqTable, Family: f})
		if err := c.Flush(); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("nftables: delete table %s: %w", MasqTable, err))
		}
	}
	m.applied = ""
	return errors.Join(errs...)
}

// mergePrefixes keeps the prefixes of one family, sorted, with those
// another holds left out: an interval set refuses overlapping elements.
func mergePrefixes(ps []netip.Prefix, v4 bool) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range ps {
		if p.Addr().Is4() == v4 {
			out = append(out, p.Masked())
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	var merged []netip.Prefix
	for _, p := range out {
		if n := len(merged); n > 0 && merged[n-1].Overlaps(p) {
			continue // sorted: the earlier one holds it
		}
		merged = append(merged, p)
	}
	return merged
}

// intervalElements is an interval set's elements for ps: each prefix's
// first address, and the address past its last as an interval end.
func intervalElements(ps []netip.Prefix) []nftables.SetElement {
	var els []nftables.SetElement
	for _, p := range ps {
		els = append(els, nftables.SetElement{Key: p.Addr().AsSlice()})
		if end, ok := pastEnd(p); ok {
			els = append(els, nftables.SetElement{Key: end.AsSlice(), IntervalEnd: true})
		}
	}
	return els
}

// pastEnd is the first address after p, false when p runs to the end of
// the address space.
func pastEnd(p netip.Prefix) (netip.Addr, bool) {
	b := p.Addr().AsSlice()
	host := p.Addr().BitLen() - p.Bits()
	for i := len(b) - 1; i >= 0 && host > 0; i-- {
		n := min(host, 8)
		b[i] |= byte(1<<n - 1)
		host -= n
	}
	last, _ := netip.AddrFromSlice(b)
	next := last.Next()
	return next, next.IsValid()
}

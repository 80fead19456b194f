package proxy

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"syscall"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// Table is the name of the proxy's nftables tables, one of family ip
// and one of family ip6. The proxy owns them whole: it makes them,
// changes them, and on Cleanup deletes them; it touches no other.
const Table = "berth-proxy"

// masqMark is the packet mark of connections to masquerade, kube-proxy's.
const masqMark = 0x4000

// Names of the table's fixed maps and chains, as kube-proxy's nftables
// mode names them.
const (
	mapServiceIPs         = "service-ips"
	mapServiceNodePorts   = "service-nodeports"
	mapNoEndpointServices = "no-endpoint-services"
	mapNoEndpointNodePort = "no-endpoint-nodeports"
	chainServices         = "services"
	chainEndpointsCheck   = "endpoints-check"
	chainMarkMasq         = "mark-for-masquerade"
	chainReject           = "reject-chain"
	// NetworkPolicy: the verdict maps from a pod's address to its chain,
	// and the base chains that look them up.
	mapPolicyIngress   = "policy-ingress"
	mapPolicyEgress    = "policy-egress"
	chainPolicyForward = "policy-forward"
	chainPolicyInput   = "policy-input"
	// loadBalancerSourceRanges: the verdict map from a load-balancer
	// address, protocol and port to its firewall chain.
	mapFirewallIPs = "firewall-ips"
)

// rtnLocal is the fib address type of a local address (RTN_LOCAL).
const rtnLocal = 2

// Syncer writes Rulesets into the tables, those of one sync in one
// nftables transaction, changing only what differs from the last ones
// written.
type Syncer struct {
	// conn opens a connection in the namespace the rules belong in.
	conn func() (*nftables.Conn, error)
	// applied is what each family's table holds; missing when that is
	// unknown, and the next Sync writes the table whole.
	applied map[corev1.IPFamily]*Ruleset
	// setID numbers the sets of one transaction.
	setID uint32
}

// NewSyncer writes in the network namespace whose handle is nsFD; a
// negative nsFD is the process's own.
func NewSyncer(nsFD int) *Syncer {
	return &Syncer{applied: map[corev1.IPFamily]*Ruleset{}, conn: func() (*nftables.Conn, error) {
		opts := []nftables.ConnOption{nftables.WithSockOptions(bigSendBuffer)}
		if nsFD >= 0 {
			opts = append(opts, nftables.WithNetNSFd(nsFD))
		}
		return nftables.New(opts...)
	}}
}

// sendBuffer bounds one transaction: netlink refuses a batch larger
// than the socket's send buffer, and a table written whole for 1,000
// Services of 10 endpoints is some megabytes.
const sendBuffer = 256 << 20

// bigSendBuffer raises the socket's send buffer past the system's
// limit (SO_SNDBUFFORCE, which root may), else to it; and the receive
// buffer likewise, which holds the acknowledgement of every message of
// the batch.
func bigSendBuffer(c *netlink.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		for _, o := range [][2]int{{unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}, {unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}} {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o[0], sendBuffer) != nil {
				serr = errors.Join(serr, unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o[1], sendBuffer))
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// family is what differs between the ip and the ip6 table: the
// addresses' length, type and place in the header, the registers a
// concatenation after an address starts at, and the NAT and ICMP
// numbers.
type family struct {
	ip    corev1.IPFamily
	table *nftables.Table
	// addrType and vipKeyType are the key types of an address and of
	// address . protocol . port.
	addrType, vipKeyType nftables.SetDatatype
	// addrLen is an address's length; saddr and daddr are the offsets
	// of the source and destination in the network header.
	addrLen, saddr, daddr uint32
	// afterAddr is the first 32-bit register after an address loaded
	// into NFT_REG_1.
	afterAddr uint32
	natFamily uint32
	// portUnreachable is the ICMP (ICMPv6) code of port unreachable.
	portUnreachable uint8
}

var (
	familyIPv4 = &family{ip: corev1.IPv4Protocol,
		table:    &nftables.Table{Name: Table, Family: nftables.TableFamilyIPv4},
		addrType: nftables.TypeIPAddr, vipKeyType: nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService),
		addrLen: 4, saddr: 12, daddr: 16, afterAddr: reg32, natFamily: unix.NFPROTO_IPV4, portUnreachable: 3}
	familyIPv6 = &family{ip: corev1.IPv6Protocol,
		table:    &nftables.Table{Name: Table, Family: nftables.TableFamilyIPv6},
		addrType: nftables.TypeIP6Addr, vipKeyType: nftables.MustConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetProto, nftables.TypeInetService),
		addrLen: 16, saddr: 8, daddr: 24, afterAddr: reg32 + 3, natFamily: unix.NFPROTO_IPV6, portUnreachable: 4}
)

// families are the tables, the ip one first.
var families = []*family{familyIPv4, familyIPv6}

func familyTable(f corev1.IPFamily) *family {
	if familyOf(f) == corev1.IPv6Protocol {
		return familyIPv6
	}
	return familyIPv4
}

func (s *Syncer) nextID() uint32 { s.setID++; return s.setID }

var portKeyType = nftables.MustConcatSetType(nftables.TypeInetProto, nftables.TypeInetService)

func (f *family) fixedMap(name string, key nftables.SetDatatype) *nftables.Set {
	return &nftables.Set{Table: f.table, Name: name, IsMap: true, Concatenation: true, KeyType: key, DataType: nftables.TypeVerdict}
}

// Sync makes the tables hold rss, one Ruleset per family, in one
// transaction. It writes a family's table whole when it does not know
// what it holds or finds it gone (flushed by hand), and else only the
// chains and map elements that changed; full tells whether any was
// written whole. A family with no Ruleset in rss is left as it is.
func (s *Syncer) Sync(rss ...*Ruleset) (full bool, err error) {
	c, err := s.conn()
	if err != nil {
		return false, fmt.Errorf("nftables: %w", err)
	}
	for _, rs := range rss {
		f := familyTable(rs.Family)
		old := s.applied[f.ip]
		if old != nil && !f.intact(c) {
			old = nil
		}
		delete(s.applied, f.ip) // unknown until the transaction is in
		if old == nil {
			full = true
		}
		if err := s.write(c, f, old, rs); err != nil {
			return full, err
		}
	}
	if err := c.Flush(); err != nil {
		return full, fmt.Errorf("nftables: table %s (written whole: %v): %w", Table, full, err)
	}
	for _, rs := range rss {
		s.applied[familyTable(rs.Family).ip] = rs
	}
	return full, nil
}

// write adds to c's batch what makes f's table hold rs, from old; from
// nothing, the table replaced whole, when old is nil.
func (s *Syncer) write(c *nftables.Conn, f *family, old, rs *Ruleset) error {
	table := f.table
	if old == nil {
		// Added, deleted and added again in the one transaction: a table
		// of unknown content (an earlier agent's) is replaced whole with
		// no moment between, or, when there was none, made.
		old = &Ruleset{}
		c.AddTable(table)
		c.DelTable(table)
		c.AddTable(table)
		if err := s.addFixed(c, f); err != nil {
			return err
		}
	}
	// setIDs are the affinity sets made in this transaction, which rules
	// name by ID as well.
	setIDs := map[string]uint32{}
	var delSets []string
	// NetworkPolicy peer sets, before the rules that look them up: new
	// ones made, changed ones emptied and filled again.
	for _, name := range slices.Sorted(maps.Keys(rs.PolicySets)) {
		ranges := rs.PolicySets[name]
		prev, ok := old.PolicySets[name]
		if ok && slices.Equal(prev, ranges) {
			continue
		}
		set := f.policySet(name)
		if !ok {
			set.ID = s.nextID()
			if err := c.AddSet(set, nil); err != nil {
				return fmt.Errorf("nftables: set %s: %w", name, err)
			}
			setIDs[name] = set.ID
		} else {
			c.FlushSet(set)
		}
		for part := range slices.Chunk(f.intervalElements(ranges), elementsPerMessage) {
			if err := c.SetAddElements(set, part); err != nil {
				return fmt.Errorf("nftables: set %s: %w", name, err)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rs.PolicyChains)) {
		pc := rs.PolicyChains[name]
		prev, ok := old.PolicyChains[name]
		if ok && samePolicyChain(prev, pc) {
			continue
		}
		ch := resetChain(c, table, name, ok)
		for _, r := range f.policyRules(pc, setIDs) {
			c.AddRule(&nftables.Rule{Table: table, Chain: ch, Exprs: r})
		}
	}
	// New and changed endpoint chains, then service chains, which jump to them.
	for _, name := range slices.Sorted(maps.Keys(rs.Endpoints)) {
		ep := rs.Endpoints[name]
		prev, ok := old.Endpoints[name]
		if ok && prev == ep {
			continue
		}
		ch := resetChain(c, table, name, ok)
		if ep.Affinity > 0 && (!ok || prev.Affinity == 0) {
			set := f.affinitySet(name, s.nextID())
			if err := c.AddSet(set, nil); err != nil {
				return fmt.Errorf("nftables: affinity set of %s: %w", name, err)
			}
			setIDs[set.Name] = set.ID
		}
		if ok && prev.Affinity > 0 && ep.Affinity == 0 {
			delSets = append(delSets, affinityName(name))
		}
		for _, r := range f.endpointRules(name, ep, setIDs) {
			c.AddRule(&nftables.Rule{Table: table, Chain: ch, Exprs: r})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rs.Services)) {
		sc := rs.Services[name]
		prev, ok := old.Services[name]
		if ok && sameService(prev, sc) {
			continue
		}
		ch := resetChain(c, table, name, ok)
		if err := f.serviceRules(c, ch, sc, rs.Endpoints, setIDs); err != nil {
			return err
		}
	}
	// Map elements.
	if err := syncMap(c, f.fixedMap(mapServiceIPs, f.vipKeyType), old.IPs, rs.IPs, f.vipKey, gotoVerdict); err != nil {
		return err
	}
	if err := syncMap(c, f.fixedMap(mapServiceNodePorts, portKeyType), old.NodePorts, rs.NodePorts, portKey, gotoVerdict); err != nil {
		return err
	}
	reject := func(struct{}) *expr.Verdict { return &expr.Verdict{Kind: expr.VerdictGoto, Chain: chainReject} }
	if err := syncMap(c, f.fixedMap(mapNoEndpointServices, f.vipKeyType), old.NoEndpoints, rs.NoEndpoints, f.vipKey, reject); err != nil {
		return err
	}
	if err := syncMap(c, f.fixedMap(mapNoEndpointNodePort, portKeyType), old.NoEndpointsNodePorts, rs.NoEndpointsNodePorts, portKey, reject); err != nil {
		return err
	}
	jump := func(chain string) *expr.Verdict { return &expr.Verdict{Kind: expr.VerdictJump, Chain: chain} }
	if err := syncMap(c, f.policyMap(mapPolicyIngress), old.PolicyIngress, rs.PolicyIngress, f.addrKey, jump); err != nil {
		return err
	}
	if err := syncMap(c, f.policyMap(mapPolicyEgress), old.PolicyEgress, rs.PolicyEgress, f.addrKey, jump); err != nil {
		return err
	}
	if err := syncMap(c, f.fixedMap(mapFirewallIPs, f.vipKeyType), old.Firewalls, rs.Firewalls, f.vipKey, jump); err != nil {
		return err
	}
	for name := range old.PolicyChains {
		if _, ok := rs.PolicyChains[name]; !ok {
			ch := &nftables.Chain{Name: name, Table: table}
			c.FlushChain(ch)
			c.DelChain(ch)
		}
	}
	// Chains gone: service chains first, then the endpoint chains they
	// jumped to, each flushed before it is deleted.
	for name := range old.Services {
		if _, ok := rs.Services[name]; !ok {
			ch := &nftables.Chain{Name: name, Table: table}
			c.FlushChain(ch)
			c.DelChain(ch)
		}
	}
	for name, ep := range old.Endpoints {
		if _, ok := rs.Endpoints[name]; !ok {
			ch := &nftables.Chain{Name: name, Table: table}
			c.FlushChain(ch)
			c.DelChain(ch)
			if ep.Affinity > 0 {
				delSets = append(delSets, affinityName(name))
			}
		}
	}
	// Sets last: no rule names them any more.
	for name := range old.PolicySets {
		if _, ok := rs.PolicySets[name]; !ok {
			delSets = append(delSets, name)
		}
	}
	for _, name := range delSets {
		c.DelSet(&nftables.Set{Table: table, Name: name})
	}
	return nil
}

// intact tells whether the table is there with its fixed rules: `nft
// delete table` or `nft flush ruleset` remove it, `nft flush table` and
// `nft flush chain` empty its chains, and either way the next sync
// writes it whole.
func (f *family) intact(c *nftables.Conn) bool {
	if _, err := c.ListTableOfFamily(Table, f.table.Family); err != nil {
		return false
	}
	for _, name := range []string{"nat-prerouting", chainServices, chainPolicyForward} {
		rules, err := c.GetRules(f.table, &nftables.Chain{Name: name, Table: f.table})
		if err != nil || len(rules) == 0 {
			return false
		}
	}
	return true
}

// Cleanup deletes the tables, each in a transaction of its own: one
// that is not there (a node without IPv6, or a table deleted by hand)
// leaves the other to go.
func (s *Syncer) Cleanup() error {
	var errs []error
	for _, f := range families {
		c, err := s.conn()
		if err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
		c.DelTable(f.table)
		delete(s.applied, f.ip)
		if err := c.Flush(); err != nil && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.EAFNOSUPPORT) {
			errs = append(errs, fmt.Errorf("nftables: delete table %s of %s: %w", Table, f.ip, err))
		}
	}
	return errors.Join(errs...)
}

func sameService(a, b ServiceChain) bool {
	return a.Masquerade == b.Masquerade && a.Affinity == b.Affinity && slices.Equal(a.Endpoints, b.Endpoints)
}

func gotoVerdict(chain string) *expr.Verdict {
	return &expr.Verdict{Kind: expr.VerdictGoto, Chain: chain}
}

// syncMap deletes the elements of m gone or changed from old to cur and
// adds the new and changed ones.
func syncMap[K comparable, V comparable](c *nftables.Conn, m *nftables.Set, old, cur map[K]V, key func(K) []byte, verdict func(V) *expr.Verdict) error {
	var del, add []nftables.SetElement
	for _, k := range slices.Collect(maps.Keys(old)) {
		if v, ok := cur[k]; !ok || v != old[k] {
			del = append(del, nftables.SetElement{Key: key(k)})
		}
	}
	for k, v := range cur {
		if ov, ok := old[k]; !ok || ov != v {
			add = append(add, nftables.SetElement{Key: key(k), VerdictData: verdict(v)})
		}
	}
	for part := range slices.Chunk(del, elementsPerMessage) {
		if err := c.SetDeleteElements(m, part); err != nil {
			return fmt.Errorf("nftables: map %s: %w", m.Name, err)
		}
	}
	for part := range slices.Chunk(add, elementsPerMessage) {
		if err := c.SetAddElements(m, part); err != nil {
			return fmt.Errorf("nftables: map %s: %w", m.Name, err)
		}
	}
	return nil
}

// elementsPerMessage bounds the elements of one netlink message: the
// library nests them all in one attribute, whose length is 16 bits, so
// a thousand elements overflow it and the kernel reads garbage (ENOENT
// for a chain name it cannot find, or worse).
const elementsPerMessage = 200

// vipKey is the key of an address . protocol . port: each field padded
// to four bytes, as nftables lays out concatenations.
func (f *family) vipKey(v VIP) []byte {
	return append(f.addrKey(v.Addr), byte(v.Proto), 0, 0, 0, byte(v.Port>>8), byte(v.Port), 0, 0)
}

func portKey(p NodePort) []byte {
	return []byte{byte(p.Proto), 0, 0, 0, byte(p.Port >> 8), byte(p.Port), 0, 0}
}

func affinityName(chain string) string { return "affinity-" + chain[:min(len(chain), 200)] }

func (f *family) affinitySet(chain string, id uint32) *nftables.Set {
	return &nftables.Set{Table: f.table, ID: id, Name: affinityName(chain), KeyType: f.addrType, HasTimeout: true, Dynamic: true}
}

// The registers of a lookup of daddr . l4proto . dport: NFT_REG_1 holds
// the first field (an IPv6 address fills its four 32-bit words), the
// 32-bit registers after it the rest.
const (
	reg1  = 1
	reg32 = 9 // NFT_REG32_01, the one after NFT_REG_1's first word
)

func (f *family) loadVIP() []expr.Any {
	return []expr.Any{
		f.loadAddr(f.daddr),
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: f.afterAddr},
		&expr.Payload{DestRegister: f.afterAddr + 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
	}
}

// loadAddr loads the address at offset of the network header (saddr or
// daddr) into NFT_REG_1.
func (f *family) loadAddr(offset uint32) *expr.Payload {
	return &expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: f.addrLen}
}

func loadNodePort() []expr.Any {
	return []expr.Any{
		&expr.Fib{Register: reg1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(rtnLocal)},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
		&expr.Payload{DestRegister: reg32, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
	}
}

func vmap(name string) *expr.Lookup {
	return &expr.Lookup{SourceRegister: reg1, SetName: name, IsDestRegSet: true, DestRegister: 0}
}

// addFixed adds the maps and chains every table has.
func (s *Syncer) addFixed(c *nftables.Conn, f *family) error {
	table := f.table
	for _, m := range []*nftables.Set{
		f.fixedMap(mapServiceIPs, f.vipKeyType), f.fixedMap(mapServiceNodePorts, portKeyType),
		f.fixedMap(mapNoEndpointServices, f.vipKeyType), f.fixedMap(mapNoEndpointNodePort, portKeyType),
		f.fixedMap(mapFirewallIPs, f.vipKeyType),
	} {
		m.ID = s.nextID()
		if err := c.AddSet(m, nil); err != nil {
			return fmt.Errorf("nftables: map %s: %w", m.Name, err)
		}
	}
	for _, m := range []*nftables.Set{f.policyMap(mapPolicyIngress), f.policyMap(mapPolicyEgress)} {
		m.ID = s.nextID()
		if err := c.AddSet(m, nil); err != nil {
			return fmt.Errorf("nftables: map %s: %w", m.Name, err)
		}
	}
	rule := func(ch *nftables.Chain, exprs ...expr.Any) {
		c.AddRule(&nftables.Rule{Table: table, Chain: ch, Exprs: exprs})
	}
	jump := func(to string) *expr.Verdict { return &expr.Verdict{Kind: expr.VerdictJump, Chain: to} }
	// NetworkPolicy: the packets of connections already let through
	// pass; a new one goes through the chain of its destination pod,
	// if policies isolate it for ingress, then of its source pod, if
	// for egress. Connections to the node itself pass through the
	// source's chain alone; those the node opens pass.
	established := []expr.Any{
		&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED), Xor: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}
	lookupAddr := func(offset uint32, m string) []expr.Any {
		return []expr.Any{f.loadAddr(offset), vmap(m)}
	}
	for _, h := range []struct {
		name string
		hook *nftables.ChainHook
	}{{chainPolicyForward, nftables.ChainHookForward}, {chainPolicyInput, nftables.ChainHookInput}} {
		ch := c.AddChain(&nftables.Chain{Name: h.name, Table: table, Type: nftables.ChainTypeFilter, Hooknum: h.hook, Priority: nftables.ChainPriorityFilter})
		rule(ch, established...)
		if h.name == chainPolicyForward {
			rule(ch, lookupAddr(f.daddr, mapPolicyIngress)...)
		}
		rule(ch, lookupAddr(f.saddr, mapPolicyEgress)...)
	}

	services := c.AddChain(&nftables.Chain{Name: chainServices, Table: table})
	rule(services, append(f.loadVIP(), vmap(mapServiceIPs))...)
	rule(services, append(loadNodePort(), vmap(mapServiceNodePorts))...)

	check := c.AddChain(&nftables.Chain{Name: chainEndpointsCheck, Table: table})
	rule(check, append(f.loadVIP(), vmap(mapNoEndpointServices))...)
	rule(check, append(loadNodePort(), vmap(mapNoEndpointNodePort))...)

	mark := c.AddChain(&nftables.Chain{Name: chainMarkMasq, Table: table})
	rule(mark,
		&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^uint32(masqMark)), Xor: binaryutil.NativeEndian.PutUint32(masqMark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1})

	reject := c.AddChain(&nftables.Chain{Name: chainReject, Table: table})
	rule(reject, &expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: f.portUnreachable})

	dstnat := nftables.ChainPriorityNATDest
	// Before the DNAT, while the destination is still the load-balancer
	// address: connections from outside its source ranges are dropped.
	preDNAT := nftables.ChainPriority(*dstnat - 10)
	for _, h := range []struct {
		name string
		hook *nftables.ChainHook
	}{{"filter-prerouting-pre-dnat", nftables.ChainHookPrerouting}, {"filter-output-pre-dnat", nftables.ChainHookOutput}} {
		ch := c.AddChain(&nftables.Chain{Name: h.name, Table: table, Type: nftables.ChainTypeFilter, Hooknum: h.hook, Priority: &preDNAT})
		rule(ch, append(f.loadVIP(), vmap(mapFirewallIPs))...)
	}
	for _, h := range []struct {
		name string
		hook *nftables.ChainHook
	}{{"nat-prerouting", nftables.ChainHookPrerouting}, {"nat-output", nftables.ChainHookOutput}} {
		ch := c.AddChain(&nftables.Chain{Name: h.name, Table: table, Type: nftables.ChainTypeNAT, Hooknum: h.hook, Priority: dstnat})
		rule(ch, jump(chainServices))
	}
	post := c.AddChain(&nftables.Chain{Name: "nat-postrouting", Table: table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	rule(post,
		&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(masqMark), Xor: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Masq{})
	filter := nftables.ChainPriorityFilter
	for _, h := range []struct {
		name string
		hook *nftables.ChainHook
	}{{"filter-input", nftables.ChainHookInput}, {"filter-forward", nftables.ChainHookForward}, {"filter-output", nftables.ChainHookOutput}} {
		ch := c.AddChain(&nftables.Chain{Name: h.name, Table: table, Type: nftables.ChainTypeFilter, Hooknum: h.hook, Priority: filter})
		rule(ch,
			&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitNEW), Xor: binaryutil.NativeEndian.PutUint32(0)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(0)},
			jump(chainEndpointsCheck))
	}
	return nil
}

// serviceRules picks an endpoint: the one a client's affinity names,
// else one at random, as kube-proxy's service chains do (with a rule
// per endpoint here, where kube-proxy looks numgen up in an anonymous
// verdict map).
func (f *family) serviceRules(c *nftables.Conn, ch *nftables.Chain, sc ServiceChain, eps map[string]EndpointChain, setIDs map[string]uint32) error {
	rule := func(exprs ...expr.Any) { c.AddRule(&nftables.Rule{Table: f.table, Chain: ch, Exprs: exprs}) }
	if sc.Masquerade {
		rule(&expr.Verdict{Kind: expr.VerdictJump, Chain: chainMarkMasq})
	}
	if sc.Affinity > 0 {
		for _, ep := range sc.Endpoints {
			if eps[ep].Affinity == 0 {
				continue
			}
			rule(f.loadAddr(f.saddr),
				&expr.Lookup{SourceRegister: reg1, SetName: affinityName(ep), SetID: setIDs[affinityName(ep)]},
				&expr.Verdict{Kind: expr.VerdictGoto, Chain: ep})
		}
	}
	// Endpoint i of n is taken with probability 1/(n-i) once those
	// before it were passed over: each is taken one time in n.
	n := len(sc.Endpoints)
	for i, ep := range sc.Endpoints {
		if i == n-1 {
			rule(gotoVerdict(ep))
			break
		}
		rule(&expr.Numgen{Register: reg1, Modulus: uint32(n - i), Type: unix.NFT_NG_RANDOM},
			&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(0)},
			gotoVerdict(ep))
	}
	return nil
}

// endpointRules send a connection to one endpoint: one from the
// endpoint itself (hairpin) is masqueraded so that the answer comes back
// through the node; the client is recorded for affinity.
func (f *family) endpointRules(name string, ep EndpointChain, setIDs map[string]uint32) [][]expr.Any {
	a := f.addrKey(ep.Addr)
	rules := [][]expr.Any{{
		f.loadAddr(f.saddr),
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: a},
		&expr.Verdict{Kind: expr.VerdictJump, Chain: chainMarkMasq},
	}}
	if ep.Affinity > 0 {
		rules = append(rules, []expr.Any{
			f.loadAddr(f.saddr),
			&expr.Dynset{SrcRegKey: reg1, SetName: affinityName(name), SetID: setIDs[affinityName(name)], Operation: unix.NFT_DYNSET_OP_UPDATE, Timeout: ep.Affinity},
		})
	}
	rules = append(rules, []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{byte(ep.Proto)}},
		&expr.Immediate{Register: reg1, Data: a},
		&expr.Immediate{Register: f.afterAddr, Data: binaryutil.BigEndian.PutUint16(ep.Port)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: f.natFamily, RegAddrMin: reg1, RegProtoMin: f.afterAddr, Specified: true},
	})
	return rules
}

func (f *family) policyMap(name string) *nftables.Set {
	return &nftables.Set{Table: f.table, Name: name, IsMap: true, KeyType: f.addrType, DataType: nftables.TypeVerdict}
}

func (f *family) policySet(name string) *nftables.Set {
	return &nftables.Set{Table: f.table, Name: name, KeyType: f.addrType, Interval: true}
}

// addrKey is a's bytes, 4 in the ip table and 16 in the ip6 one.
func (f *family) addrKey(a netip.Addr) []byte {
	if f.addrLen == 4 {
		b := a.As4()
		return b[:]
	}
	b := a.As16()
	return b[:]
}

// intervalElements are an interval set's elements for ranges: each
// range's first address, and the address after its last flagged as
// the end (none for a range to the last address).
func (f *family) intervalElements(ranges []AddrRange) []nftables.SetElement {
	out := make([]nftables.SetElement, 0, 2*len(ranges))
	for _, r := range ranges {
		out = append(out, nftables.SetElement{Key: f.addrKey(r.First)})
		if next := r.Last.Next(); next.IsValid() {
			out = append(out, nftables.SetElement{Key: f.addrKey(next), IntervalEnd: true})
		}
	}
	return out
}

// policyRules are a NetworkPolicy chain's rules: each rule of pc returns
// (lets the connection on) when its peer and port match; what none
// matches is dropped.
func (f *family) policyRules(pc PolicyChain, setIDs map[string]uint32) [][]expr.Any {
	offset := f.saddr
	if pc.Egress {
		offset = f.daddr
	}
	var out [][]expr.Any
	ret := func() expr.Any { return &expr.Verdict{Kind: expr.VerdictReturn} }
	for _, r := range pc.Rules {
		peer := func() []expr.Any {
			if r.Set == "" {
				return nil
			}
			return []expr.Any{
				f.loadAddr(offset),
				&expr.Lookup{SourceRegister: reg1, SetName: r.Set, SetID: setIDs[r.Set]},
			}
		}
		if len(r.Ports) == 0 {
			out = append(out, append(peer(), ret()))
			continue
		}
		for _, p := range r.Ports {
			e := append(peer(),
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{byte(p.Proto)}})
			if p.First != 0 {
				e = append(e, &expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
				if p.First == p.Last {
					e = append(e, &expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binaryutil.BigEndian.PutUint16(p.First)})
				} else {
					e = append(e, &expr.Range{Op: expr.CmpOpEq, Register: reg1,
						FromData: binaryutil.BigEndian.PutUint16(p.First), ToData: binaryutil.BigEndian.PutUint16(p.Last)})
				}
			}
			out = append(out, append(e, ret()))
		}
	}
	return append(out, []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}})
}

// resetChain is the chain name of table, added when it did not exist and
// flushed when it did, ready for its rules to be written again.
func resetChain(c *nftables.Conn, table *nftables.Table, name string, existed bool) *nftables.Chain {
	ch := &nftables.Chain{Name: name, Table: table}
	if existed {
		c.FlushChain(ch)
	} else {
		c.AddChain(ch)
	}
	return ch
}

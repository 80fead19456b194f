package dns

import (
	"fmt"
	"hash/maphash"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/miekg/dns"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
)

// TTL is the time to live of every answer, negative ones included.
const TTL = 5

// Version is the Kubernetes DNS schema version berth follows, answered as
// TXT at dns-version.<zone>.
const Version = "1.1.0"

// numShards splits the service index so that a change copies one small
// map: 64 shards keep a copy near 16 entries at 1,000 services and 1,600 at
// 100,000.
const numShards = 64

// Table holds the records of one zone. Readers never lock: the service
// index is sharded into immutable maps behind atomic pointers, and every
// entry is immutable once published. Writers (in practice the one goroutine
// that follows the store) copy the shards they change.
type Table struct {
	zone        string // lower-case FQDN: "cluster.local."
	dotZone     string // "." + zone
	version     []dns.RR
	versionWire *wire
	// soa is the zone's SOA, replaced whole when its serial moves.
	soa atomic.Pointer[zoneSOA]
	// clock dates the changes: the SOA's serial is the time of the last.
	clock clock.PassiveClock

	seed   maphash.Seed
	shards [numShards]atomic.Pointer[map[string]*entry]
	// reverse maps an endpoint address (netip.Addr) to the keys of the
	// services that have it ([]string, sorted, never changed once
	// stored), for PTR questions. A sync.Map, not shards of maps: one
	// service's addresses are spread over every shard.
	reverse sync.Map
	// namespaces holds the namespaces that exist, so that <ns>.svc.<zone>
	// is NODATA, not NXDOMAIN, as CoreDNS answers for every namespace the
	// API has: those of the store, and those with a name in the table.
	namespaces atomic.Pointer[map[string]struct{}]
	// nodes holds the addresses of the cluster's Nodes: clients the server
	// forwards for, beside its recursion networks.
	nodes   atomic.Pointer[map[netip.Addr]struct{}]
	records atomic.Int64
	synced  atomic.Bool

	// mu serialises writers; nsCount and stored are theirs alone.
	mu      sync.Mutex
	nsCount map[string]int
	// stored is the store's namespaces, as SetNamespaces last gave them.
	stored map[string]struct{}
}

// zoneSOA is the zone's SOA record, and the same packed.
type zoneSOA struct {
	// rrs is the SOA alone: the apex's answer to SOA, and the authority
	// section of NXDOMAIN and NODATA answers.
	rrs  []dns.RR
	wire soaWire
}

// newZoneSOA makes the zone's SOA with a serial. As CoreDNS's, the serial
// is the time (Unix seconds) the records last changed.
func newZoneSOA(zone string, serial uint32) *zoneSOA {
	soa := &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: TTL},
		Ns:      "ns.dns." + zone,
		Mbox:    "hostmaster." + zone,
		Serial:  serial,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  TTL,
	}
	return &zoneSOA{rrs: []dns.RR{soa}, wire: newSOAWire(soa)}
}

// NewTable returns an empty table for zone (a domain such as
// "cluster.local"). It answers SERVFAIL until MarkSynced.
func NewTable(zone string) (*Table, error) {
	return makeTable(zone, clock.RealClock{})
}

// makeTable is NewTable with the clock that dates changes.
func makeTable(zone string, clk clock.PassiveClock) (*Table, error) {
	z := strings.ToLower(dns.Fqdn(zone))
	if z == "." {
		return nil, fmt.Errorf("dns: zone %q: the root zone cannot be the cluster domain", zone)
	}
	if _, ok := dns.IsDomainName(z); !ok {
		return nil, fmt.Errorf("dns: zone %q is not a domain name", zone)
	}
	t := &Table{
		zone:    z,
		dotZone: "." + z,
		seed:    maphash.MakeSeed(),
		nsCount: map[string]int{},
		clock:   clk,
	}
	t.soa.Store(newZoneSOA(z, uint32(clk.Now().Unix())))
	t.version = []dns.RR{&dns.TXT{
		Hdr: dns.RR_Header{Name: "dns-version." + z, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: TTL},
		Txt: []string{Version},
	}}
	t.versionWire = packWire("dns-version."+z, dns.TypeTXT, t.version, nil, nil)
	empty := map[string]*entry{}
	for i := range t.shards {
		t.shards[i].Store(&empty)
	}
	t.namespaces.Store(&map[string]struct{}{})
	return t, nil
}

// Zone returns the zone as an FQDN, as "cluster.local.".
func (t *Table) Zone() string { return t.zone }

// Synced reports whether the table has been filled from the store once;
// before that every question is answered SERVFAIL.
func (t *Table) Synced() bool { return t.synced.Load() }

// MarkSynced says the table holds a full read of its source: from then on
// it answers from its records.
func (t *Table) MarkSynced() { t.synced.Store(true) }

// Set replaces the records of one service with those made from it and its
// Endpoints (which may be nil); a nil service removes them. The server's
// table is kept by its store follower; Set is for tables fed otherwise.
func (t *Table) Set(namespace, name string, svc *api.Service, ep *api.Endpoints) {
	t.apply([]change{{key: serviceKey(namespace, name), entry: buildEntry(t.zone, svc, ep)}})
}

// SetNamespaces replaces the namespaces the table knows to exist besides
// those of its services: a namespace without a service to answer for is
// still there, and its name answers NODATA. The server's table is kept
// by its store follower.
func (t *Table) SetNamespaces(names []string) {
	set := make(map[string]struct{}, len(names))
	for _, ns := range names {
		set[strings.ToLower(ns)] = struct{}{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stored = set
	t.publishNamespaces()
	t.touch()
}

// Records returns how many resource records the table holds.
func (t *Table) Records() int { return int(t.records.Load()) }

// serviceKey is the index key of a service: "<svc>.<ns>", the labels its
// DNS name starts with, so that a query finds it with a substring of the
// question and no allocation.
func serviceKey(namespace, name string) string {
	return strings.ToLower(name) + "." + strings.ToLower(namespace)
}

func (t *Table) shard(key string) *atomic.Pointer[map[string]*entry] {
	return &t.shards[maphash.String(t.seed, key)%numShards]
}

// get returns the entry of a service key, or nil.
func (t *Table) get(key string) *entry {
	return (*t.shard(key).Load())[key]
}

func (t *Table) hasNamespace(ns string) bool {
	_, ok := (*t.namespaces.Load())[ns]
	return ok
}

// change replaces the entry of one service; a nil entry removes it.
type change struct {
	key   string
	entry *entry
}

// apply publishes a batch of changes, copying each shard it touches once.
func (t *Table) apply(changes []change) {
	if len(changes) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	byShard := map[*atomic.Pointer[map[string]*entry]][]change{}
	for _, c := range changes {
		s := t.shard(c.key)
		byShard[s] = append(byShard[s], c)
	}
	nsChanged := false
	var delta int64
	for s, cs := range byShard {
		m := maps.Clone(*s.Load())
		for _, c := range cs {
			old := m[c.key]
			if old != nil {
				delta -= int64(old.records)
				if t.nsCount[old.namespace]--; t.nsCount[old.namespace] == 0 {
					delete(t.nsCount, old.namespace)
					nsChanged = true
				}
			}
			t.reindex(c.key, old, c.entry)
			if c.entry == nil {
				delete(m, c.key)
				continue
			}
			m[c.key] = c.entry
			delta += int64(c.entry.records)
			if t.nsCount[c.entry.namespace]++; t.nsCount[c.entry.namespace] == 1 {
				nsChanged = true
			}
		}
		s.Store(&m)
	}
	if nsChanged {
		t.publishNamespaces()
	}
	t.records.Add(delta)
	t.touch()
}

// touch dates a change: the SOA's serial becomes the time, in seconds.
// t.mu is held.
func (t *Table) touch() {
	serial := uint32(t.clock.Now().Unix())
	if t.soa.Load().rrs[0].(*dns.SOA).Serial != serial {
		t.soa.Store(newZoneSOA(t.zone, serial))
	}
}

// reindex moves a service in the reverse index from the addresses of its
// old entry to those of its new one; either may be nil. t.mu is held.
func (t *Table) reindex(key string, old, new *entry) {
	if old != nil {
		for ip := range old.ptrs {
			if new == nil || new.ptrs[ip] == nil {
				t.setReverse(ip, key, false)
			}
		}
	}
	if new != nil {
		for ip := range new.ptrs {
			if old == nil || old.ptrs[ip] == nil {
				t.setReverse(ip, key, true)
			}
		}
	}
}

// setReverse adds a service key to an address's, or removes it; t.mu is
// held.
func (t *Table) setReverse(ip netip.Addr, key string, add bool) {
	var keys []string
	if v, ok := t.reverse.Load(ip); ok {
		keys = v.([]string)
	}
	i, found := slices.BinarySearch(keys, key)
	switch {
	case add && !found:
		keys = slices.Insert(slices.Clone(keys), i, key)
	case !add && found:
		keys = slices.Delete(slices.Clone(keys), i, i+1)
	default:
		return
	}
	if len(keys) == 0 {
		t.reverse.Delete(ip)
		return
	}
	t.reverse.Store(ip, slices.Clip(keys))
}

// publishNamespaces publishes the namespaces of the services and of the
// store, together; t.mu is held.
func (t *Table) publishNamespaces() {
	set := maps.Clone(t.stored)
	if set == nil {
		set = make(map[string]struct{}, len(t.nsCount))
	}
	for ns := range t.nsCount {
		set[ns] = struct{}{}
	}
	t.namespaces.Store(&set)
}

// SetNodeAddresses replaces the addresses of the cluster's Nodes.
func (t *Table) SetNodeAddresses(addrs map[netip.Addr]struct{}) { t.nodes.Store(&addrs) }

// isNode reports whether an address is one of a Node's.
func (t *Table) isNode(a netip.Addr) bool {
	m := t.nodes.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[a]
	return ok
}

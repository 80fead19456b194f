package dns

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

var (
	serviceKind   = api.MustLookupResource("services")
	endpointsKind = api.MustLookupResource("endpoints")
	namespaceKind = api.MustLookupResource("namespaces")
	nodeKind      = api.MustLookupResource("nodes")
)

// maxBatch bounds how many services one table update rebuilds, so that a
// flood of changes still publishes regularly.
const maxBatch = 1024

// follower keeps a Table in step with the store's Services, Endpoints,
// Namespaces and Nodes' addresses through the informers: it lists them from one snapshot,
// then takes every later change, and lists a kind again when its watch
// is lost. It is the table's only writer. A change rebuilds the entry of
// the one service it concerns, or the table's set of namespaces.
type follower struct {
	informers *informer.Factory
	table     *Table

	// mu guards what the informers' handlers record, from their
	// goroutines, for run to rebuild from.
	mu sync.Mutex
	// The objects the table is built from, by "namespace/name"; the
	// store's own objects, shared and never changed.
	services  map[string]*api.Service
	endpoints map[string]*api.Endpoints
	// namespaces are the names of the store's namespaces; nsDirty says
	// they changed since the table last had them.
	namespaces map[string]struct{}
	nsDirty    bool
	// nodes are the addresses of each Node, by name; nodesDirty says they
	// changed since the table last had them.
	nodes      map[string][]netip.Addr
	nodesDirty bool
	// dirty are the services changed since the table last had them.
	dirty map[string]struct{}
	// wake tells run that something is dirty.
	wake chan struct{}

	// beforeList, if set, runs before the first listing: tests hold the
	// follower back with it to see the server before it has synced.
	beforeList func(ctx context.Context)
	// lists counts listings of services: one at start, one per lost
	// watch.
	lists atomic.Int64
}

func newFollower(inf *informer.Factory, t *Table) *follower {
	return &follower{
		informers:  inf,
		table:      t,
		services:   map[string]*api.Service{},
		endpoints:  map[string]*api.Endpoints{},
		namespaces: map[string]struct{}{},
		nodes:      map[string][]netip.Addr{},
		dirty:      map[string]struct{}{},
		wake:       make(chan struct{}, 1),
	}
}

// run lists the three kinds from one snapshot into the table, marks it
// synced, and applies every later change until ctx ends.
func (f *follower) run(ctx context.Context) error {
	if f.beforeList != nil {
		f.beforeList(ctx)
	}
	remove, err := f.informers.Register(
		informer.Registration{Kind: serviceKind, Handler: informer.Handler{List: f.listServices, Event: f.record}},
		informer.Registration{Kind: endpointsKind, Handler: informer.Handler{List: f.listEndpoints, Event: f.record}},
		informer.Registration{Kind: namespaceKind, Handler: informer.Handler{List: f.listNamespaces, Event: f.record}},
		informer.Registration{Kind: nodeKind, Handler: informer.Handler{List: f.listNodes, Event: f.record}},
	)
	if err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	defer remove()
	f.rebuild()
	f.table.MarkSynced()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.wake:
			f.rebuild()
		}
	}
}

func (f *follower) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// record notes one change in the follower's copy of the store.
func (f *follower) record(e store.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.signal()
	if n, ok := e.Object.(*api.Node); ok {
		// Only a node's addresses matter; its heartbeats do not.
		addrs := nodeAddresses(n)
		if e.Type == store.Deleted {
			addrs = nil
		}
		if old, ok := f.nodes[n.Name]; ok != (addrs != nil) || !slices.Equal(old, addrs) {
			if addrs == nil {
				delete(f.nodes, n.Name)
			} else {
				f.nodes[n.Name] = addrs
			}
			f.nodesDirty = true
		}
		return
	}
	if _, ok := e.Object.(*api.Namespace); ok {
		// Only a namespace's coming and going changes an answer; its
		// status, labels and finalizers do not.
		switch name := e.Object.GetName(); e.Type {
		case store.Added:
			f.namespaces[name] = struct{}{}
			f.nsDirty = true
		case store.Deleted:
			delete(f.namespaces, name)
			f.nsDirty = true
		}
		return
	}
	key := objectKey(e.Object)
	f.dirty[key] = struct{}{}
	switch o := e.Object.(type) {
	case *api.Service:
		if e.Type == store.Deleted {
			delete(f.services, key)
		} else {
			f.services[key] = o
		}
	case *api.Endpoints:
		if e.Type == store.Deleted {
			delete(f.endpoints, key)
		} else {
			f.endpoints[key] = o
		}
	}
}

// listServices, listEndpoints and listNamespaces swap the follower's copy
// of a kind for a fresh listing, and mark dirty the services whose
// service or Endpoints changed (resourceVersion) or went.
func (f *follower) listServices(snap *store.Snapshot) error {
	f.lists.Add(1)
	services := map[string]*api.Service{}
	err := snap.Each(serviceKind, store.Filter{}, func(o api.Object) bool {
		services[objectKey(o)] = o.(*api.Service)
		return true
	})
	if err != nil {
		return fmt.Errorf("dns: list services: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	markChanged(f.dirty, f.services, services)
	f.services = services
	f.signal()
	return nil
}

func (f *follower) listEndpoints(snap *store.Snapshot) error {
	endpoints := map[string]*api.Endpoints{}
	err := snap.Each(endpointsKind, store.Filter{}, func(o api.Object) bool {
		endpoints[objectKey(o)] = o.(*api.Endpoints)
		return true
	})
	if err != nil {
		return fmt.Errorf("dns: list endpoints: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	markChanged(f.dirty, f.endpoints, endpoints)
	f.endpoints = endpoints
	f.signal()
	return nil
}

func (f *follower) listNamespaces(snap *store.Snapshot) error {
	namespaces := map[string]struct{}{}
	err := snap.Each(namespaceKind, store.Filter{}, func(o api.Object) bool {
		namespaces[o.GetName()] = struct{}{}
		return true
	})
	if err != nil {
		return fmt.Errorf("dns: list namespaces: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nsDirty = f.nsDirty || !maps.Equal(namespaces, f.namespaces)
	f.namespaces = namespaces
	f.signal()
	return nil
}

// listNodes swaps the follower's Node addresses for a fresh listing.
func (f *follower) listNodes(snap *store.Snapshot) error {
	nodes := map[string][]netip.Addr{}
	err := snap.Each(nodeKind, store.Filter{}, func(o api.Object) bool {
		nodes[o.GetName()] = nodeAddresses(o.(*api.Node))
		return true
	})
	if err != nil {
		return fmt.Errorf("dns: list nodes: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = nodes
	f.nodesDirty = true
	f.signal()
	return nil
}

// nodeAddresses are the IP addresses a Node's status lists, sorted; never
// nil, so that a node without any is still told from one that is gone.
func nodeAddresses(n *api.Node) []netip.Addr {
	out := []netip.Addr{}
	for _, a := range n.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// markChanged marks dirty the keys of objects added, changed or gone
// between two listings.
func markChanged[T api.Object](dirty map[string]struct{}, old, now map[string]T) {
	for key, o := range now {
		if was, ok := old[key]; !ok || was.GetResourceVersion() != o.GetResourceVersion() {
			dirty[key] = struct{}{}
		}
	}
	for key := range old {
		if _, ok := now[key]; !ok {
			dirty[key] = struct{}{}
		}
	}
}

// rebuild recomputes the entries of up to maxBatch dirty services and
// publishes them in one table update, and the namespaces if they
// changed; it wakes itself again for the rest.
func (f *follower) rebuild() {
	f.mu.Lock()
	var namespaces []string
	if f.nsDirty {
		namespaces = slices.Collect(maps.Keys(f.namespaces))
		f.nsDirty = false
	}
	var nodes map[netip.Addr]struct{}
	if f.nodesDirty {
		nodes = map[netip.Addr]struct{}{}
		for _, as := range f.nodes {
			for _, a := range as {
				nodes[a] = struct{}{}
			}
		}
		f.nodesDirty = false
	}
	changes := make([]change, 0, min(len(f.dirty), maxBatch))
	for key := range f.dirty {
		if len(changes) == maxBatch {
			f.signal()
			break
		}
		delete(f.dirty, key)
		ns, name := splitKey(key)
		changes = append(changes, change{
			key:   serviceKey(ns, name),
			entry: buildEntry(f.table.zone, f.services[key], f.endpoints[key]),
		})
	}
	f.mu.Unlock()
	if namespaces != nil {
		f.table.SetNamespaces(namespaces)
	}
	if nodes != nil {
		f.table.SetNodeAddresses(nodes)
	}
	f.table.apply(changes)
}

func objectKey(o api.Object) string { return o.GetNamespace() + "/" + o.GetName() }

func splitKey(key string) (namespace, name string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

package podnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// Manager keeps this node joined to the other nodes' pods: a route to
// each one's podCIDR via its InternalIP (host-gw), and, while this node has
// a podCIDR of its own, IP forwarding on, the masquerade of what its pods
// send out of the cluster, and the node-local DNS forwarder on that
// podCIDR's gateway address. It watches the Nodes through the API.
//
// When it stops it leaves the routes and the masquerade in place, so that
// pods keep talking across an agent restart; the next start removes the
// routes of nodes gone meanwhile. Cleanup removes them all.
type Manager struct {
	o      Options
	router *Router
	masq   *Masquerader
	log    *slog.Logger

	mu      sync.Mutex
	skipped map[string]string
	dns     *DNSForwarder
	dnsAddr netip.AddrPort
	routes  []Route
}

// NewManager opens the netlink handle of o.NetNS.
func NewManager(o Options) (*Manager, error) {
	if o.Client == nil || o.NodeName == "" {
		return nil, fmt.Errorf("pod network: need a client and a node name")
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = DefaultResyncPeriod
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	h := &netlink.Handle{}
	if o.NetNS != nil {
		var err error
		if h, err = netlink.NewHandleAt(*o.NetNS); err != nil {
			return nil, fmt.Errorf("pod network: netlink: %w", err)
		}
	}
	return &Manager{o: o, router: NewRouter(h), masq: NewMasquerader(o.NetNS), log: o.Logger.With("component", "podnet"), skipped: map[string]string{}}, nil
}

// Run keeps the routes and the forwarder in step with the Nodes until ctx
// ends, then stops the forwarder.
func (m *Manager) Run(ctx context.Context) error {
	poke := make(chan struct{}, 1)
	inf := client.NewInformer(m.o.Client, nodeKind, client.InformerOptions{Clock: m.o.Clock, Logger: m.log},
		func(client.Event) {
			select {
			case poke <- struct{}{}:
			default:
			}
		})
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { _ = inf.Run(ctx) })
	defer m.stopDNS()
	if err := inf.WaitForSync(ctx); err != nil {
		return nil // stopped before the first listing
	}
	tick := m.o.Clock.NewTicker(m.o.ResyncPeriod)
	defer tick.Stop()
	for {
		nodes := make([]*api.Node, 0)
		for _, o := range inf.List() {
			nodes = append(nodes, o.(*api.Node))
		}
		if err := m.Sync(nodes); err != nil {
			m.log.Error("pod network", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poke:
		case <-tick.C():
		}
	}
}

// Sync converges once on nodes: routes, forwarding and the forwarder.
func (m *Manager) Sync(nodes []*api.Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	routes, skipped := WantRoutes(m.o.NodeName, nodes)
	m.noteSkipped(skipped)
	own := m.o.PodCIDR
	if i := slices.IndexFunc(nodes, func(n *api.Node) bool { return n.Name == m.o.NodeName }); i >= 0 && nodes[i].Spec.PodCIDR != "" {
		own = nodes[i].Spec.PodCIDR
	}
	if own != "" {
		gw, err := Gateway(own)
		if err != nil {
			return fmt.Errorf("node %s: spec.podCIDR: %w", m.o.NodeName, err)
		}
		if err := inNetNS(m.o.NetNS, func() error { return enableForwarding("/proc/sys", gw.Is4()) }); err != nil {
			return err
		}
		cluster := []netip.Prefix{}
		for _, r := range routes {
			cluster = append(cluster, r.Dst)
		}
		if err := m.masq.Sync(netip.MustParsePrefix(own), cluster); err != nil {
			return err
		}
		if err := m.ensureDNS(netip.AddrPortFrom(gw, DNSPort)); err != nil {
			return err
		}
	}
	if err := m.router.Sync(routes); err != nil {
		return err
	}
	if !slices.Equal(routes, m.routes) {
		m.log.Info("routes to the other nodes' pods", "routes", len(routes))
		m.routes = routes
	}
	return nil
}

// Cleanup removes every berth route of the namespace and berth's nftables
// table, and stops the forwarder: what a node leaving the cluster for good
// does.
func (m *Manager) Cleanup() error {
	m.stopDNS()
	m.mu.Lock()
	defer m.mu.Unlock()
	return errors.Join(m.router.Cleanup(), m.masq.Cleanup())
}

// Routes is what the last Sync routed.
func (m *Manager) Routes() []Route {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.routes)
}

// noteSkipped logs each node that gets no route, when its reason changes.
func (m *Manager) noteSkipped(skipped []Skipped) {
	now := map[string]string{}
	for _, s := range skipped {
		now[s.Node] = s.Reason
		if m.skipped[s.Node] != s.Reason {
			m.log.Info("no route to a node's pods", "node", s.Node, "reason", s.Reason)
		}
	}
	m.skipped = now
}

// ensureDNS runs the forwarder on addr, moving it when addr changed.
func (m *Manager) ensureDNS(addr netip.AddrPort) error {
	if m.o.ClusterDNS == "" || (m.dns != nil && m.dnsAddr == addr) {
		return nil
	}
	m.stopDNSLocked()
	f := NewDNSForwarder(m.o.ClusterDNS, m.log)
	if err := inNetNS(m.o.NetNS, func() error { return f.Start(addr) }); err != nil {
		return err
	}
	m.dns, m.dnsAddr = f, addr
	m.log.Info("node-local DNS forwarder", "listen", addr.String(), "upstream", m.o.ClusterDNS)
	return nil
}

func (m *Manager) stopDNS() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopDNSLocked()
}

func (m *Manager) stopDNSLocked() {
	if m.dns != nil {
		m.dns.Stop()
		m.dns = nil
	}
}

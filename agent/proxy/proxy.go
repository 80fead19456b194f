package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// Defaults of the proxy's periods.
const (
	// DefaultCheckPeriod is how often the proxy syncs with nothing
	// changed, which finds a table deleted or flushed by hand and makes
	// it again.
	DefaultCheckPeriod = 30 * time.Second
	// DefaultMinSyncPeriod gathers changes that come together into one
	// sync, as kube-proxy's --min-sync-period (which is 1s there).
	DefaultMinSyncPeriod = 10 * time.Millisecond
)

// retryPeriod is the wait before a failed sync is tried again.
const retryPeriod = time.Second

// Options configure a Proxy.
type Options struct {
	Client   *client.Client
	NodeName string
	// Syncer writes the rules; NewSyncer(-1) for this machine's.
	Syncer *Syncer
	// Families are the address families served, each from a table of
	// its own; DefaultFamilies when empty.
	Families []corev1.IPFamily
	// CheckPeriod and MinSyncPeriod: see the defaults.
	CheckPeriod, MinSyncPeriod time.Duration
	Clock                      clock.WithTicker
	Logger                     *slog.Logger
	// HealthCheckAddress is the node address on which the health check
	// node ports of the LoadBalancer Services of externalTrafficPolicy
	// Local are served (see HealthChecks); none are when it is empty.
	HealthCheckAddress string
	// Synced, when set, is told the Rulesets written, one per family
	// in the order of Families, and when their transaction was in, for
	// tests and measurements.
	Synced func(rules []*Ruleset, done time.Time)
}

// Proxy keeps the node's service rules in step with the Services and
// EndpointSlices of the API, and its pods' NetworkPolicy rules with the
// Pods, Namespaces and NetworkPolicies.
type Proxy struct {
	opts       Options
	services   *client.Informer
	slices     *client.Informer
	pods       *client.Informer
	namespaces *client.Informer
	policies   *client.Informer
	changed    chan struct{}
	// builders remember each family's rules per Service between syncs.
	builders map[corev1.IPFamily]*Builder
	// health serves the health check node ports; nil for none.
	health *HealthChecks
}

// New makes a proxy; Run runs it.
func New(opts Options) *Proxy {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CheckPeriod <= 0 {
		opts.CheckPeriod = DefaultCheckPeriod
	}
	if opts.MinSyncPeriod <= 0 {
		opts.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if len(opts.Families) == 0 {
		opts.Families = DefaultFamilies()
	}
	p := &Proxy{opts: opts, changed: make(chan struct{}, 1), builders: map[corev1.IPFamily]*Builder{}}
	if opts.HealthCheckAddress != "" {
		p.health = NewHealthChecks(opts.HealthCheckAddress, opts.Logger)
	}
	poke := func(client.Event) {
		select {
		case p.changed <- struct{}{}:
		default:
		}
	}
	io := client.InformerOptions{Clock: opts.Clock, Logger: opts.Logger}
	p.services = client.NewInformer(opts.Client, api.MustLookupResource("services"), io, poke)
	p.slices = client.NewInformer(opts.Client, api.MustLookupResource("endpointslices"), io, poke)
	p.pods = client.NewInformer(opts.Client, api.MustLookupResource("pods"), io, poke)
	p.namespaces = client.NewInformer(opts.Client, api.MustLookupResource("namespaces"), io, poke)
	p.policies = client.NewInformer(opts.Client, api.MustLookupResource("networkpolicies"), io, poke)
	return p
}

// Run syncs the rules at every change until ctx ends. It leaves them in
// place when it returns, so that a restarted agent's node keeps routing
// in between; Cleanup removes them.
func (p *Proxy) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.health != nil {
		defer p.health.Close()
	}
	informers := []*client.Informer{p.services, p.slices, p.pods, p.namespaces, p.policies}
	errs := make(chan error, len(informers))
	for _, inf := range informers {
		go func() { errs <- inf.Run(ctx) }()
	}
	defer func() {
		cancel()
		for range informers {
			<-errs
		}
	}()
	for _, inf := range informers {
		if err := inf.WaitForSync(ctx); err != nil {
			return err
		}
	}
	check := p.opts.Clock.NewTicker(p.opts.CheckPeriod)
	defer check.Stop()
	log := p.opts.Logger.With("component", "service-proxy")
	for {
		if err := p.SyncOnce(); err != nil {
			// Tried again soon, whole: a failed transaction leaves the
			// table as it was, which the next sync no longer trusts.
			log.Error("sync", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-p.opts.Clock.After(retryPeriod):
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.changed:
			// Let the changes that come together arrive.
			select {
			case <-ctx.Done():
				return nil
			case <-p.opts.Clock.After(p.opts.MinSyncPeriod):
			}
		case <-check.C():
		}
	}
}

// DefaultFamilies are IPv4, and IPv6 too where the kernel has it (a
// kernel booted with ipv6.disable=1 has no /proc/net/if_inet6, and no
// ip6 nftables family).
func DefaultFamilies() []corev1.IPFamily {
	if _, err := os.Stat("/proc/net/if_inet6"); err != nil {
		return []corev1.IPFamily{corev1.IPv4Protocol}
	}
	return []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
}

// SyncOnce writes the rules of what the informers hold, every family's
// in one transaction: the rules of the Services that changed since the
// last sync are made again, and the chains and map elements that
// changed are written. It is not safe to call concurrently.
func (p *Proxy) SyncOnce() error {
	in := Input{NodeName: p.opts.NodeName}
	for _, o := range p.services.List() {
		in.Services = append(in.Services, o.(*api.Service))
	}
	for _, o := range p.slices.List() {
		in.Slices = append(in.Slices, o.(*api.EndpointSlice))
	}
	for _, o := range p.pods.List() {
		in.Pods = append(in.Pods, o.(*api.Pod))
	}
	for _, o := range p.namespaces.List() {
		in.Namespaces = append(in.Namespaces, o.(*api.Namespace))
	}
	for _, o := range p.policies.List() {
		in.Policies = append(in.Policies, o.(*api.NetworkPolicy))
	}
	rules := make([]*Ruleset, 0, len(p.opts.Families))
	for _, f := range p.opts.Families {
		in.Family = f
		b := p.builders[f]
		if b == nil {
			b = new(Builder)
			p.builders[f] = b
		}
		rules = append(rules, b.Build(in))
	}
	full, err := p.opts.Syncer.Sync(rules...)
	if err != nil {
		return fmt.Errorf("service proxy: %w", err)
	}
	if p.health != nil {
		// A port that cannot be opened (another program holds it) is
		// said, and tried again at the next sync; the rules stand.
		if err := p.health.Sync(healthCheckPorts(p.opts.NodeName, in.Services, in.Slices)); err != nil {
			p.opts.Logger.Error("service proxy: health check node ports", "err", err)
		}
	}
	if p.opts.Synced != nil {
		p.opts.Synced(rules, p.opts.Clock.Now())
	}
	if full {
		p.opts.Logger.Info("service proxy: wrote the nftables table whole", "table", Table, "services", len(in.Services))
	}
	return nil
}

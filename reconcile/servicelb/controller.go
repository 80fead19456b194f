package servicelb

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "service-lb-controller"

// passKey is the controller's only key: every LoadBalancer Service gets
// the same addresses, those of the ready nodes.
const passKey = "services"

var (
	serviceKind = api.MustLookupResource("services")
	nodeKind    = api.MustLookupResource("nodes")
)

// Options configure the controller.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
}

type lb struct{ store *store.Store }

// NewController returns the controller: a pass at start and whenever a
// Service, or a node's readiness or addresses, change.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	return reconcile.NewController(Name, &lb{store: s}, reconcile.Options{
		Clock:    opts.Clock,
		Backoff:  opts.Backoff,
		Logger:   opts.Logger,
		ListKeys: func(context.Context) ([]string, error) { return []string{passKey}, nil },
		Store:    s,
		Watches: []reconcile.Watch{
			{Kind: serviceKind, Keys: func(store.Event) []string { return []string{passKey} }},
			{Kind: nodeKind, Keys: nodeKeys},
		},
	})
}

// nodeKeys asks for a pass when a node comes or goes, or its readiness
// or addresses change; not at every heartbeat.
func nodeKeys(e store.Event) []string {
	if e.Type == store.Modified && e.Old != nil {
		old, n := e.Old.(*api.Node), e.Object.(*api.Node)
		if ready(old) == ready(n) && equality.Semantic.DeepEqual(old.Status.Addresses, n.Status.Addresses) {
			return nil
		}
	}
	return []string{passKey}
}

func ready(n *api.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == api.NodeReady {
			return c.Status == api.ConditionTrue
		}
	}
	return false
}

// Ingress is the pure core: one address per ready node, its ExternalIP
// if it has one, else its InternalIP, sorted.
func Ingress(nodes []*api.Node) []corev1.LoadBalancerIngress {
	var ips []netip.Addr
	for _, n := range nodes {
		if !ready(n) || n.DeletionTimestamp != nil {
			continue
		}
		var internal, external string
		for _, a := range n.Status.Addresses {
			switch {
			case a.Type == api.NodeExternalIP && external == "":
				external = a.Address
			case a.Type == api.NodeInternalIP && internal == "":
				internal = a.Address
			}
		}
		for _, s := range []string{external, internal} {
			if ip, err := netip.ParseAddr(s); err == nil {
				ips = append(ips, ip)
				break
			}
		}
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	ips = slices.Compact(ips)
	out := make([]corev1.LoadBalancerIngress, len(ips))
	vip := corev1.LoadBalancerIPModeVIP
	for i, ip := range ips {
		out[i] = corev1.LoadBalancerIngress{IP: ip.String(), IPMode: &vip}
	}
	return out
}

// Reconcile makes one pass in one transaction: every LoadBalancer
// Service of no other class gets the ready nodes' addresses; any other
// Service loses ones it still holds.
func (l *lb) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	_, err := l.store.Txn(ctx, func(tx *store.Txn) error {
		objs, err := tx.List(nodeKind, store.Filter{})
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		nodes := make([]*api.Node, len(objs))
		for i, o := range objs {
			nodes[i] = o.(*api.Node)
		}
		want := Ingress(nodes)
		svcs, err := tx.List(serviceKind, store.Filter{})
		if err != nil {
			return fmt.Errorf("list services: %w", err)
		}
		for _, o := range svcs {
			svc := o.(*api.Service)
			var ing []corev1.LoadBalancerIngress
			switch {
			case svc.Spec.Type == api.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil:
				ing = want
			case svc.Spec.Type == api.ServiceTypeLoadBalancer:
				continue // another load balancer's
			}
			if equality.Semantic.DeepEqual(svc.Status.LoadBalancer.Ingress, ing) || len(ing) == 0 && len(svc.Status.LoadBalancer.Ingress) == 0 {
				continue
			}
			next := svc.DeepCopy()
			next.Status.LoadBalancer.Ingress = ing
			if _, err := tx.Update(next); err != nil {
				return fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
			}
		}
		return nil
	})
	return reconcile.Result{}, err
}

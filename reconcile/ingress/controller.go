package ingress

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs; EventComponent its events'.
const (
	Name           = "ingress-controller"
	EventComponent = "berth-ingress"
)

// passKey is the controller's only key: a pass looks at every Ingress.
const passKey = "ingresses"

// Options configure the controller.
type Options struct {
	// Addresses are the addresses the proxy is served on, written to the
	// status of every Ingress of the berth class.
	Addresses func() []string
	Clock     clock.WithTicker
	Backoff   reconcile.Backoff
	Logger    *slog.Logger
	Events    *event.Recorder
}

type controller struct {
	store *store.Store
	opts  Options

	// reported are the problems last reported per Ingress, so that one
	// event is recorded when a problem appears, not one a pass.
	mu       sync.Mutex
	reported map[string][]string
}

// NewController returns the controller: a pass at start and whenever an
// Ingress, IngressClass, Service or Secret changes.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	c := &controller{store: s, opts: opts, reported: map[string][]string{}}
	all := func(store.Event) []string { return []string{passKey} }
	return reconcile.NewController(Name, c, reconcile.Options{
		Clock:    opts.Clock,
		Backoff:  opts.Backoff,
		Logger:   opts.Logger,
		ListKeys: func(context.Context) ([]string, error) { return []string{passKey}, nil },
		Store:    s,
		Watches: []reconcile.Watch{
			{Kind: ingressKind, Keys: statusOnly},
			{Kind: classKind, Keys: all},
			{Kind: serviceKind, Keys: serviceKeys},
			{Kind: secretKind, Keys: all},
		},
	})
}

// statusOnly asks for a pass at every change of an Ingress but the
// controller's own status writes.
func statusOnly(e store.Event) []string {
	if e.Type == store.Modified && e.Old != nil {
		old, n := e.Old.(*api.Ingress), e.Object.(*api.Ingress)
		if equality.Semantic.DeepEqual(old.Spec, n.Spec) && equality.Semantic.DeepEqual(old.Annotations, n.Annotations) {
			return nil
		}
	}
	return []string{passKey}
}

// serviceKeys asks for a pass when a Service comes, goes or changes its
// ports; not at each status write.
func serviceKeys(e store.Event) []string {
	if e.Type == store.Modified && e.Old != nil {
		if equality.Semantic.DeepEqual(e.Old.(*api.Service).Spec.Ports, e.Object.(*api.Service).Spec.Ports) {
			return nil
		}
	}
	return []string{passKey}
}

// Status is the pure core: the load-balancer status of an Ingress
// served on addrs.
func Status(addrs []string) networkingv1.IngressLoadBalancerStatus {
	var st networkingv1.IngressLoadBalancerStatus
	for _, a := range addrs {
		st.Ingress = append(st.Ingress, networkingv1.IngressLoadBalancerIngress{IP: a})
	}
	return st
}

// Problems lists what an Ingress names that the store lacks: Services,
// their ports, and TLS Secrets, each as reason and message.
func Problems(ing *api.Ingress, services map[string]*api.Service, secrets map[string]bool) [][2]string {
	var out [][2]string
	check := func(b *networkingv1.IngressBackend) {
		if b == nil || b.Service == nil {
			return
		}
		key := ing.Namespace + "/" + b.Service.Name
		svc := services[key]
		if svc == nil {
			out = append(out, [2]string{"ServiceNotFound", fmt.Sprintf("service %s not found: its routes answer 503", key)})
			return
		}
		if svc.Spec.Type == api.ServiceTypeExternalName {
			return
		}
		for _, p := range svc.Spec.Ports {
			if (b.Service.Port.Name != "" && p.Name == b.Service.Port.Name) || (b.Service.Port.Name == "" && p.Port == b.Service.Port.Number) {
				return
			}
		}
		port := b.Service.Port.Name
		if port == "" {
			port = strconv.Itoa(int(b.Service.Port.Number))
		}
		out = append(out, [2]string{"ServicePortNotFound", fmt.Sprintf("service %s has no port %s: its routes answer 503", key, port)})
	}
	check(ing.Spec.DefaultBackend)
	for _, r := range ing.Spec.Rules {
		if r.HTTP != nil {
			for i := range r.HTTP.Paths {
				check(&r.HTTP.Paths[i].Backend)
			}
		}
	}
	for _, t := range ing.Spec.TLS {
		if t.SecretName != "" && !secrets[ing.Namespace+"/"+t.SecretName] {
			out = append(out, [2]string{"SecretNotFound", fmt.Sprintf("secret %s/%s not found: HTTPS for its hosts answers 503", ing.Namespace, t.SecretName)})
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int {
		if a[0] != b[0] {
			if a[0] < b[0] {
				return -1
			}
			return 1
		}
		if a[1] < b[1] {
			return -1
		} else if a[1] > b[1] {
			return 1
		}
		return 0
	})
	return slices.Compact(out)
}

// Reconcile makes one pass in one transaction.
func (c *controller) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	var addrs []string
	if c.opts.Addresses != nil {
		addrs = c.opts.Addresses()
	}
	want := Status(addrs)
	var reports []report
	_, err := c.store.Txn(ctx, func(tx *store.Txn) error {
		reports = reports[:0]
		classes, err := listClasses(tx)
		if err != nil {
			return err
		}
		def := api.DefaultIngressClassName(classes)
		ings, err := tx.List(ingressKind, store.Filter{})
		if err != nil {
			return fmt.Errorf("list ingresses: %w", err)
		}
		services := map[string]*api.Service{}
		secrets := map[string]bool{}
		if len(ings) > 0 {
			svcs, err := tx.List(serviceKind, store.Filter{})
			if err != nil {
				return fmt.Errorf("list services: %w", err)
			}
			for _, o := range svcs {
				services[o.GetNamespace()+"/"+o.GetName()] = o.(*api.Service)
			}
			secs, err := tx.List(secretKind, store.Filter{})
			if err != nil {
				return fmt.Errorf("list secrets: %w", err)
			}
			for _, o := range secs {
				secrets[o.GetNamespace()+"/"+o.GetName()] = true
			}
		}
		for _, o := range ings {
			ing := o.(*api.Ingress)
			if !api.IngressServedBy(ing, api.IngressControllerBerth, classes, def) {
				continue
			}
			reports = append(reports, report{ing, Problems(ing, services, secrets)})
			if equality.Semantic.DeepEqual(ing.Status.LoadBalancer, want) || len(want.Ingress) == 0 && len(ing.Status.LoadBalancer.Ingress) == 0 {
				continue
			}
			next := ing.DeepCopy()
			next.Status.LoadBalancer = want
			if _, err := tx.Update(next); err != nil {
				return fmt.Errorf("ingress %s/%s: %w", ing.Namespace, ing.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	c.report(reports)
	return reconcile.Result{}, nil
}

// report is one Ingress's problems at a pass.
type report struct {
	ing      *api.Ingress
	problems [][2]string
}

// report records a Warning event for each problem an Ingress did not
// have at the last pass, and forgets Ingresses gone.
func (c *controller) report(reports []report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, r := range reports {
		key := r.ing.Namespace + "/" + r.ing.Name + "/" + string(r.ing.UID)
		seen[key] = true
		before := c.reported[key]
		var now []string
		for _, p := range r.problems {
			id := p[0] + "\x00" + p[1]
			now = append(now, id)
			if !slices.Contains(before, id) {
				c.opts.Events.Event(r.ing, api.EventTypeWarning, p[0], p[1])
			}
		}
		c.reported[key] = now
	}
	for key := range c.reported {
		if !seen[key] {
			delete(c.reported, key)
		}
	}
}

package endpointslice

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/members"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "endpointslice"

// ManagedBy is the value of api.LabelManagedBy on the slices this
// controller writes: Kubernetes' controller's name, which readers such as
// kube-proxy and meshes look for. The controller changes and deletes only
// the slices that carry it.
const ManagedBy = "endpointslice-controller.k8s.io"

var (
	serviceKind = api.MustLookupResource("services")
	sliceKind   = api.MustLookupResource("endpointslices")
	podKind     = api.MustLookupResource("pods")
	nodeKind    = api.MustLookupResource("nodes")

	managed = labels.SelectorFromSet(labels.Set{api.LabelManagedBy: ManagedBy})
)

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
}

// Reconciler converges the EndpointSlices of one service, named by its
// key.
type Reconciler struct {
	store    *store.Store
	services *members.Index
}

// NewReconciler returns the Reconciler alone, for tests and for callers
// that run it under their own Controller.
func NewReconciler(s *store.Store) *Reconciler {
	return &Reconciler{store: s, services: members.NewIndex()}
}

// NewController returns the endpointslice controller, fed by watches on
// Services, Pods and the slices it manages. Run it with
// Controller.Run(ctx, workers).
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	r := NewReconciler(s)
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: r.Watches(),
	})
}

// Watches are the store watches that feed the controller: a service's own
// changes, a pod's changes to the services that select it (a pod no
// service selects costs a lookup, no reconcile), and changes to managed
// slices, so that an edit or a deletion by someone else is undone. Nodes
// are not watched: a node's zone is read when its service's slices are
// written, as in Kubernetes.
func (r *Reconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{Kind: serviceKind, Keys: r.services.ServiceKeys},
		{Kind: podKind, Keys: r.services.PodKeys},
		{Kind: sliceKind, Filter: store.Filter{Labels: managed}, Keys: sliceKeys},
	}
}

// sliceKeys is the key of the service a slice belongs to.
func sliceKeys(e store.Event) []string {
	var keys []string
	for _, o := range []api.Object{e.Object, e.Old} {
		if o == nil {
			continue
		}
		if name, ok := o.GetLabels()[api.LabelServiceName]; ok {
			if k := reconcile.Key(o.GetNamespace(), name); len(keys) == 0 || keys[0] != k {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// Reconcile makes the EndpointSlices of the service named by key hold its
// endpoints, writing only what changed, in one transaction; a service
// that is gone, or keeps no endpoints, loses the slices this controller
// wrote for it.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	namespace, name := reconcile.SplitKey(key)
	snap := r.store.Snapshot()
	// A slice being deleted is no longer counted on, as in Kubernetes:
	// it is neither changed nor deleted again, and its endpoints go into
	// live slices.
	var existing []*api.EndpointSlice
	err := snap.Each(sliceKind, store.Filter{Index: store.IndexService, Value: key, Labels: managed}, func(o api.Object) bool {
		if es := o.(*api.EndpointSlice); es.DeletionTimestamp == nil {
			existing = append(existing, es)
		}
		return true
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("endpointslices %s: %w", key, err)
	}
	obj, err := snap.Get(serviceKind, namespace, name)
	if err != nil && !store.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("endpointslices %s: %w", key, err)
	}
	var svc *api.Service
	if err == nil {
		svc = obj.(*api.Service)
	}
	r.services.Observe(key, svc, snap.Revision())
	var want []*group
	if svc != nil && len(members.SelectorOf(svc)) > 0 {
		pods, err := members.SelectedPods(snap, svc)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("endpointslices %s: %w", key, err)
		}
		want = groups(svc, members.Of(svc, pods, true), zones(snap))
	} else {
		svc = nil
	}
	w := plan(svc, existing, want)
	if w.empty() {
		return reconcile.Result{}, nil
	}
	_, err = r.store.Txn(ctx, func(tx *store.Txn) error {
		for _, es := range w.delete {
			_, err := tx.Delete(sliceKind, es.Namespace, es.Name, store.DeleteOptions{
				Preconditions: &store.Preconditions{UID: string(es.UID), ResourceVersion: es.ResourceVersion},
			})
			if err != nil && !store.IsNotFound(err) {
				return fmt.Errorf("delete endpointslice %s/%s: %w", es.Namespace, es.Name, err)
			}
		}
		for _, es := range w.update {
			if _, err := tx.Update(es); err != nil {
				return fmt.Errorf("update endpointslice %s/%s: %w", es.Namespace, es.Name, err)
			}
		}
		for _, es := range w.create {
			if _, err := tx.Create(es); err != nil {
				return fmt.Errorf("create endpointslice for %s: %w", key, err)
			}
		}
		return nil
	})
	if store.IsNamespaceTerminating(err) {
		// The namespace controller deletes everything in it.
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// zones returns the zone of a node as the snapshot has it (its
// topology.kubernetes.io/zone label), each node read once.
func zones(snap *store.Snapshot) func(node string) string {
	seen := map[string]string{}
	return func(node string) string {
		if z, ok := seen[node]; ok {
			return z
		}
		z := ""
		if obj, err := snap.Get(nodeKind, "", node); err == nil {
			z = obj.GetLabels()[api.LabelTopologyZone]
		}
		seen[node] = z
		return z
	}
}

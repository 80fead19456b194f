package endpoints

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/members"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "endpoints"

// LabelManagedBy marks the Endpoints this controller writes, with value
// ManagedBy, so it deletes only its own when a service goes or loses its
// selector, and leaves alone the Endpoints a user wrote for a service
// without a selector.
const (
	LabelManagedBy = "endpoints.berth.dev/managed-by"
	ManagedBy      = "endpoints-controller"
)

var (
	serviceKind   = api.MustLookupResource("services")
	endpointsKind = api.MustLookupResource("endpoints")
	podKind       = api.MustLookupResource("pods")
)

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
}

// Reconciler converges the Endpoints of one service, named by its key.
type Reconciler struct {
	store    *store.Store
	services *members.Index
}

// NewReconciler returns the Reconciler alone, for tests and for callers
// that run it under their own Controller.
func NewReconciler(s *store.Store) *Reconciler {
	return &Reconciler{store: s, services: members.NewIndex()}
}

// NewController returns the endpoints controller, fed by watches on
// Services, Pods and the Endpoints it manages. Run it with
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
// changes, a pod's changes to the services that select it (before or after
// the change), and changes to managed Endpoints, so that an edit or a
// deletion by someone else is undone.
func (r *Reconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{Kind: serviceKind, Keys: r.services.ServiceKeys},
		{Kind: podKind, Keys: r.services.PodKeys},
		{Kind: endpointsKind, Filter: store.Filter{Labels: labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})}},
	}
}

// Reconcile makes the Endpoints named by key match its service and the
// pods that service selects. It writes only when something changed, and
// deletes Endpoints it manages whose service is gone or has no selector.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	namespace, name := reconcile.SplitKey(key)
	snap := r.store.Snapshot()
	var existing *api.Endpoints
	switch obj, err := snap.Get(endpointsKind, namespace, name); {
	case err == nil:
		existing = obj.(*api.Endpoints)
	case !store.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("endpoints %s: %w", key, err)
	}
	obj, err := snap.Get(serviceKind, namespace, name)
	if err != nil && !store.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("endpoints %s: %w", key, err)
	}
	var svc *api.Service
	if err == nil {
		svc = obj.(*api.Service)
	}
	r.services.Observe(key, svc, snap.Revision())
	if svc == nil || len(members.SelectorOf(svc)) == 0 {
		return reconcile.Result{}, r.deleteManaged(ctx, existing)
	}

	pods, err := members.SelectedPods(snap, svc)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("endpoints %s: %w", key, err)
	}
	want := desired(svc, Subsets(svc, pods))
	if existing != nil && upToDate(existing, want) {
		return reconcile.Result{}, nil
	}
	if existing == nil {
		if _, err := r.store.Create(ctx, want); err != nil && !store.IsNamespaceTerminating(err) {
			return reconcile.Result{}, fmt.Errorf("create endpoints %s: %w", key, err)
		}
		return reconcile.Result{}, nil
	}
	update := existing.DeepCopyObject().(*api.Endpoints)
	update.Labels = want.Labels
	update.OwnerReferences = want.OwnerReferences
	update.Subsets = want.Subsets
	if _, err := r.store.Update(ctx, update); err != nil {
		return reconcile.Result{}, fmt.Errorf("update endpoints %s: %w", key, err)
	}
	return reconcile.Result{}, nil
}

// deleteManaged deletes Endpoints this controller wrote; any other is
// someone else's to keep.
func (r *Reconciler) deleteManaged(ctx context.Context, ep *api.Endpoints) error {
	if ep == nil || ep.Labels[LabelManagedBy] != ManagedBy {
		return nil
	}
	_, err := r.store.Delete(ctx, endpointsKind, ep.Namespace, ep.Name, store.DeleteOptions{
		Preconditions: &store.Preconditions{UID: string(ep.UID), ResourceVersion: ep.ResourceVersion},
	})
	if err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("delete endpoints %s/%s: %w", ep.Namespace, ep.Name, err)
	}
	return nil
}

// desired is the Endpoints a service should have: the service's labels and
// the managed-by mark, owned by the service so that garbage collection
// removes it with the service.
func desired(svc *api.Service, subsets []api.EndpointSubset) *api.Endpoints {
	ep := &api.Endpoints{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       svc.Namespace,
			Name:            svc.Name,
			Labels:          members.ServiceLabels(svc, map[string]string{LabelManagedBy: ManagedBy}),
			OwnerReferences: members.OwnedBy(svc),
		},
		Subsets: subsets,
	}
	ep.SetGroupVersionKind(endpointsKind.GVK)
	return ep
}

// upToDate reports whether a stored Endpoints already holds what want says.
func upToDate(have, want *api.Endpoints) bool {
	return maps.Equal(have.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences) &&
		equality.Semantic.DeepEqual(have.Subsets, want.Subsets)
}

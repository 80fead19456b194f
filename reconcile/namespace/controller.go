package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "namespace"

// RecheckAfter is how soon a namespace still holding objects is looked at
// again even if no deletion event brings it back, for contents that go by
// their own finalizers or grace periods.
const RecheckAfter = 5 * time.Second

var namespaceKind = api.MustLookupResource("namespaces")

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
}

// Reconciler converges one namespace, named by its key.
type Reconciler struct {
	store *store.Store
}

// NewReconciler returns the Reconciler alone, for tests.
func NewReconciler(s *store.Store) *Reconciler { return &Reconciler{store: s} }

// NewController returns the namespace controller, fed by a watch on
// namespaces and the deletions of every namespaced kind; it looks at
// default when it starts, so that default exists.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	r := NewReconciler(s)
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock:    opts.Clock,
		Backoff:  opts.Backoff,
		Logger:   opts.Logger,
		Store:    s,
		Watches:  r.Watches(),
		ListKeys: func(context.Context) ([]string, error) { return []string{api.NamespaceDefault}, nil },
	})
}

// Watches are the namespaces themselves and, for each namespaced kind,
// deletions, which may leave a terminating namespace empty.
func (r *Reconciler) Watches() []reconcile.Watch {
	ws := []reconcile.Watch{{Kind: namespaceKind}}
	for _, k := range api.Kinds() {
		if !k.Namespaced {
			continue
		}
		ws = append(ws, reconcile.Watch{Kind: k, Keys: func(e store.Event) []string {
			if e.Type != store.Deleted {
				return nil
			}
			return []string{e.Object.GetNamespace()}
		}})
	}
	return ws
}

// Reconcile recreates default if it is gone, and empties a namespace being
// deleted, then removes its "kubernetes" finalizer so that it goes.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	obj, err := r.store.Get(namespaceKind, "", key)
	if store.IsNotFound(err) {
		if key != api.NamespaceDefault {
			return reconcile.Result{}, nil
		}
		ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: api.NamespaceDefault}}
		api.Default(ns)
		if _, err := r.store.Create(ctx, ns); err != nil && !store.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("create namespace %s: %w", key, err)
		}
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get namespace %s: %w", key, err)
	}
	ns := obj.(*api.Namespace)
	if ns.DeletionTimestamp == nil {
		return reconcile.Result{}, nil
	}
	left, err := r.deleteContents(ctx, ns.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if left > 0 {
		return reconcile.Result{RequeueAfter: RecheckAfter}, nil
	}
	return reconcile.Result{}, r.finalize(ctx, ns)
}

// deleteContents deletes every object in the namespace and counts those
// still stored (terminating pods, objects held by finalizers).
func (r *Reconciler) deleteContents(ctx context.Context, namespace string) (int, error) {
	left := 0
	var errs []error
	for _, k := range api.AllKinds() { // custom resources too
		if !k.Namespaced {
			continue
		}
		objs, _, err := r.store.List(k, store.Filter{Namespace: namespace})
		if err != nil {
			return 0, fmt.Errorf("list %s in namespace %s: %w", k.Resource, namespace, err)
		}
		for _, obj := range objs {
			if obj.GetDeletionTimestamp() != nil {
				left++
				continue
			}
			out, err := r.store.Delete(ctx, k, namespace, obj.GetName(),
				store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(obj.GetUID())}})
			switch {
			case store.IsNotFound(err):
			case err != nil:
				errs = append(errs, fmt.Errorf("delete %s %s/%s: %w", k.Resource, namespace, obj.GetName(), err))
				left++
			case out.GetDeletionTimestamp() != nil:
				left++ // marked, not yet gone
			}
		}
	}
	return left, errors.Join(errs...)
}

// finalize removes the "kubernetes" finalizer; the store lets the
// namespace go once nothing else holds it.
func (r *Reconciler) finalize(ctx context.Context, ns *api.Namespace) error {
	if !slices.Contains(ns.Spec.Finalizers, api.FinalizerKubernetes) {
		return nil
	}
	c := ns.DeepCopy()
	c.Spec.Finalizers = slices.DeleteFunc(c.Spec.Finalizers, func(f api.FinalizerName) bool { return f == api.FinalizerKubernetes })
	if _, err := r.store.Update(ctx, c); err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("finalize namespace %s: %w", ns.Name, err)
	}
	return nil
}

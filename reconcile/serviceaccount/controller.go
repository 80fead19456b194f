package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "serviceaccount"

var (
	namespaceKind = api.MustLookupResource("namespaces")
	accountKind   = api.MustLookupResource("serviceaccounts")
)

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

// NewController returns the controller, fed by namespaces and by the
// deletion of service accounts named default; it looks at every namespace
// when it starts.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	r := NewReconciler(s)
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: []reconcile.Watch{
			{Kind: namespaceKind},
			{Kind: accountKind, Keys: func(e store.Event) []string {
				if e.Type != store.Deleted || e.Object.GetName() != api.DefaultServiceAccountName {
					return nil
				}
				return []string{e.Object.GetNamespace()}
			}},
		},
		ListKeys: func(context.Context) ([]string, error) {
			objs, _, err := s.List(namespaceKind, store.Filter{})
			if err != nil {
				return nil, err
			}
			keys := make([]string, len(objs))
			for i, o := range objs {
				keys[i] = o.GetName()
			}
			return keys, nil
		},
	})
}

// Reconcile creates the namespace's default service account when the
// namespace is active and has none.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	obj, err := r.store.Get(namespaceKind, "", key)
	if store.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get namespace %s: %w", key, err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, nil
	}
	if _, err := r.store.Get(accountKind, key, api.DefaultServiceAccountName); err == nil {
		return reconcile.Result{}, nil
	} else if !store.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("get serviceaccount %s/%s: %w", key, api.DefaultServiceAccountName, err)
	}
	sa := &api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: key, Name: api.DefaultServiceAccountName}}
	api.Default(sa)
	_, err = r.store.Create(ctx, sa)
	switch {
	case err == nil, store.IsAlreadyExists(err):
		return reconcile.Result{}, nil
	case store.IsNotFound(err), store.IsNamespaceTerminating(err):
		// The namespace went, or began to go, meanwhile.
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, fmt.Errorf("create serviceaccount %s/%s: %w", key, api.DefaultServiceAccountName, err)
}

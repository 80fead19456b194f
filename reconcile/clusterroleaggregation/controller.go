package clusterroleaggregation

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "clusterrole-aggregation"

var clusterRoleKind = api.KindOf(&api.ClusterRole{})

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
}

// Reconciler converges one aggregated ClusterRole, named by its key.
type Reconciler struct {
	store *store.Store
}

// NewReconciler returns the Reconciler alone, for tests.
func NewReconciler(s *store.Store) *Reconciler { return &Reconciler{store: s} }

// NewController returns the controller: any change to a ClusterRole may
// change what an aggregated one gathers, so it queues every aggregated
// role (a handful) at each.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	aggregated := func() []string {
		var keys []string
		_ = s.Snapshot().Each(clusterRoleKind, store.Filter{}, func(o api.Object) bool {
			if o.(*api.ClusterRole).AggregationRule != nil {
				keys = append(keys, o.GetName())
			}
			return true
		})
		return keys
	}
	return reconcile.NewController(Name, NewReconciler(s), reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: []reconcile.Watch{{Kind: clusterRoleKind, Keys: func(store.Event) []string { return aggregated() }}},
		ListKeys: func(context.Context) ([]string, error) {
			return aggregated(), nil
		},
	})
}

// Reconcile writes the union of the selected roles' rules, in the order
// of the roles' names, each rule once, into the aggregated role.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	snap := r.store.Snapshot()
	obj, err := snap.Get(clusterRoleKind, "", key)
	if store.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get clusterrole %s: %w", key, err)
	}
	role := obj.(*api.ClusterRole)
	if role.AggregationRule == nil {
		return reconcile.Result{}, nil
	}
	rules, err := Aggregate(snap, role)
	if err != nil {
		return reconcile.Result{}, err
	}
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return reconcile.Result{}, nil
	}
	next := role.DeepCopyObject().(*api.ClusterRole)
	next.Rules = rules
	if _, err := r.store.Update(ctx, next); err != nil {
		if store.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("update clusterrole %s: %w", key, err)
	}
	return reconcile.Result{}, nil
}

// Aggregate returns the rules an aggregated role gathers from the roles
// of a snapshot: those of every other ClusterRole a selector matches, in
// the order of the roles' names, each rule once. Never nil, so that an
// aggregated role that gathers nothing reads "rules: []".
func Aggregate(snap *store.Snapshot, role *api.ClusterRole) ([]api.PolicyRule, error) {
	var sels []labels.Selector
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterrole %s: aggregationRule.clusterRoleSelectors[%d]: %w", role.Name, i, err)
		}
		sels = append(sels, sel)
	}
	rules := []api.PolicyRule{}
	err := snap.Each(clusterRoleKind, store.Filter{}, func(o api.Object) bool {
		if o.GetName() == role.Name {
			return true
		}
		set := labels.Set(o.GetLabels())
		if !slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(set) }) {
			return true
		}
		for _, rule := range o.(*api.ClusterRole).Rules {
			if !slices.ContainsFunc(rules, func(have api.PolicyRule) bool { return equality.Semantic.DeepEqual(have, rule) }) {
				rules = append(rules, *rule.DeepCopy())
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("list clusterroles: %w", err)
	}
	return rules, nil
}

package quota

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "resourcequota"

// DefaultResyncPeriod is how often every quota is recounted when Options
// names no period, as Kubernetes' quota controller does every five
// minutes.
const DefaultResyncPeriod = 5 * time.Minute

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	// ResyncPeriod is how often every namespace with a quota is recounted;
	// zero means DefaultResyncPeriod.
	ResyncPeriod time.Duration
}

// Reconciler recounts the quotas of one namespace, named by its key.
type Reconciler struct {
	store *store.Store
}

// NewReconciler returns the Reconciler alone, for tests.
func NewReconciler(s *store.Store) *Reconciler { return &Reconciler{store: s} }

// NewController returns the controller, fed by new quotas, changed
// limits, and the changes to counted objects that free usage (deletions,
// pods that finish or are being deleted), as Kubernetes' replenishment
// does; it recounts every namespace that holds a quota when it starts and
// every ResyncPeriod. Creations are left out: the store hook charges them
// as they are written, and recounting a namespace for each would cost a
// listing per object.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = DefaultResyncPeriod
	}
	watches := []reconcile.Watch{{Kind: quotaKind, Keys: limitsChanged}}
	for _, c := range countedKinds {
		watches = append(watches, reconcile.Watch{Kind: c.kind, Keys: usageFreed})
	}
	return reconcile.NewController(Name, NewReconciler(s), reconcile.Options{
		Clock:        opts.Clock,
		Backoff:      opts.Backoff,
		Logger:       opts.Logger,
		Store:        s,
		Watches:      watches,
		ResyncPeriod: opts.ResyncPeriod,
		ListKeys: func(context.Context) ([]string, error) {
			objs, _, err := s.List(quotaKind, store.Filter{})
			if err != nil {
				return nil, err
			}
			var keys []string
			seen := map[string]bool{}
			for _, o := range objs {
				if ns := o.GetNamespace(); !seen[ns] {
					seen[ns] = true
					keys = append(keys, ns)
				}
			}
			return keys, nil
		},
	})
}

// limitsChanged keys a quota by its namespace when it is new or its
// limits changed; the status writes of the store hook, the most common
// change to a quota, need no recount.
func limitsChanged(e store.Event) []string {
	switch e.Type {
	case store.Added:
	case store.Modified:
		if equality.Semantic.DeepEqual(e.Object.(*api.ResourceQuota).Spec, e.Old.(*api.ResourceQuota).Spec) {
			return nil
		}
	default:
		return nil
	}
	return []string{e.Object.GetNamespace()}
}

// usageFreed keys a change to a counted object by its namespace when it
// frees usage: the object's deletion, or an update that lowers what it
// uses (a pod that finishes or is being deleted, a smaller claim).
func usageFreed(e store.Event) []string {
	switch e.Type {
	case store.Deleted:
	case store.Modified:
		if SameUsage(e.Object, e.Old) || !frees(Subtract(Usage(e.Object), Usage(e.Old))) {
			return nil
		}
	default:
		return nil
	}
	return []string{e.Object.GetNamespace()}
}

func frees(delta api.ResourceList) bool {
	for _, q := range delta {
		if q.Sign() < 0 {
			return true
		}
	}
	return false
}

// Reconcile recounts the namespace's quotas from a snapshot and, only
// when one's status differs from the count, recounts and writes it again
// in one transaction, so that what it writes is exact however the
// namespace changes meanwhile. The store hook keeps usage exact as it is
// written; this puts right what the hook could not see, such as usage
// stored before the hook existed or a status written by hand.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	stale, err := recount(r.store.Snapshot(), key)
	if err != nil || len(stale) == 0 {
		return reconcile.Result{}, err
	}
	_, err = r.store.Txn(ctx, func(tx *store.Txn) error {
		stale, err := recount(tx, key)
		if err != nil {
			return err
		}
		for _, q := range stale {
			if _, err := tx.Update(q); err != nil {
				return fmt.Errorf("update quota %s/%s status: %w", q.Namespace, q.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("recount quotas of %s: %w", key, err)
	}
	return reconcile.Result{}, nil
}

// recount returns a copy, with the status it should have, of every quota
// of the namespace whose status differs from the count.
func recount(r reader, namespace string) ([]*api.ResourceQuota, error) {
	quotas, err := quotasIn(r, namespace)
	if err != nil || len(quotas) == 0 {
		return nil, err
	}
	var names []api.ResourceName
	seen := map[api.ResourceName]bool{}
	for _, q := range quotas {
		for name := range q.Spec.Hard {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	used, err := countIn(r, namespace, names)
	if err != nil {
		return nil, err
	}
	var out []*api.ResourceQuota
	for _, q := range quotas {
		want := api.ResourceQuotaStatus{}
		if len(q.Spec.Hard) > 0 {
			want.Hard = Add(q.Spec.Hard, nil)
			want.Used = make(api.ResourceList, len(q.Spec.Hard))
			for name := range q.Spec.Hard {
				want.Used[name] = used[name]
			}
		}
		if equality.Semantic.DeepEqual(q.Status, want) {
			continue
		}
		next := q.DeepCopy()
		next.Status = want
		out = append(out, next)
	}
	return out, nil
}

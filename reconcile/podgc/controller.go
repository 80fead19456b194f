package podgc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "pod-garbage-collector"

// Defaults, as kube-controller-manager's.
const (
	// DefaultThreshold is --terminated-pod-gc-threshold's default.
	DefaultThreshold = 12500
	// DefaultPeriod is how often the collector looks.
	DefaultPeriod = 20 * time.Second
	// DefaultQuarantine is how long a node must stay missing before its
	// pods are deleted.
	DefaultQuarantine = 40 * time.Second
)

// passKey is the collector's only key: a pass looks at every pod.
const passKey = "pods"

var (
	podKind  = api.KindOf(&api.Pod{})
	nodeKind = api.KindOf(&api.Node{})
)

// Options configure the collector. Zero durations take the defaults; a
// Threshold of zero or less turns the terminated-pod limit off, as
// --terminated-pod-gc-threshold=0 does.
type Options struct {
	Threshold  int
	Period     time.Duration
	Quarantine time.Duration
	Clock      clock.WithTicker
	Backoff    reconcile.Backoff
	Logger     *slog.Logger
}

func (o *Options) defaults() {
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	if o.Quarantine <= 0 {
		o.Quarantine = DefaultQuarantine
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Collector is the pod garbage collector's Reconciler: one pass deletes
// what selectTerminated and selectOrphans choose, with no grace period,
// because those pods run nowhere.
type Collector struct {
	store      *store.Store
	clock      clock.PassiveClock
	threshold  int
	quarantine time.Duration

	mu sync.Mutex
	// missing records when each node that pods name was first found
	// missing.
	missing map[string]time.Time
}

// NewCollector returns the Reconciler alone, for tests and for callers
// that run it under their own Controller; opts.Period is unused.
func NewCollector(s *store.Store, opts Options) *Collector {
	opts.defaults()
	return &Collector{store: s, clock: opts.Clock, threshold: opts.Threshold, quarantine: opts.Quarantine}
}

// NewController returns the collector, making a pass every Period on its
// clock. Run it with Controller.Run(ctx, workers).
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	opts.defaults()
	return reconcile.NewController(Name, NewCollector(s, opts), reconcile.Options{
		Clock:        opts.Clock,
		Backoff:      opts.Backoff,
		Logger:       opts.Logger,
		ListKeys:     func(context.Context) ([]string, error) { return []string{passKey}, nil },
		ResyncPeriod: opts.Period,
	})
}

// Reconcile makes one pass.
func (c *Collector) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	snap := c.store.Snapshot()
	objs, err := snap.List(podKind, store.Filter{})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("list pods: %w", err)
	}
	pods := make([]*api.Pod, len(objs))
	for i, o := range objs {
		pods[i] = o.(*api.Pod)
	}
	nodeObjs, err := snap.List(nodeKind, store.Filter{})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("list nodes: %w", err)
	}
	nodes := make(map[string]bool, len(nodeObjs))
	for _, n := range nodeObjs {
		nodes[n.GetName()] = true
	}

	c.mu.Lock()
	orphans, missing := selectOrphans(pods, nodes, c.missing, c.clock.Now(), c.quarantine)
	c.missing = missing
	c.mu.Unlock()

	var errs []error
	deleted := map[string]bool{}
	for _, p := range orphans {
		deleted[reconcile.ObjectKey(p)] = true
		errs = append(errs, c.forceDelete(ctx, p, true))
	}
	// Orphans already deleted count no more against the threshold.
	var rest []*api.Pod
	for _, p := range pods {
		if !deleted[reconcile.ObjectKey(p)] {
			rest = append(rest, p)
		}
	}
	for _, p := range selectTerminated(rest, c.threshold) {
		errs = append(errs, c.forceDelete(ctx, p, false))
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// forceDelete deletes a pod with no grace period, if it is still the pod
// that was chosen and, for an orphan, its node is still missing.
func (c *Collector) forceDelete(ctx context.Context, p *api.Pod, orphan bool) error {
	zero := int64(0)
	_, err := c.store.Txn(ctx, func(tx *store.Txn) error {
		if orphan {
			if _, err := tx.Get(nodeKind, "", p.Spec.NodeName); err == nil {
				return nil // registered after all
			} else if !store.IsNotFound(err) {
				return err
			}
		}
		_, err := tx.Delete(podKind, p.Namespace, p.Name, store.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &store.Preconditions{UID: string(p.UID)},
		})
		return err
	})
	if err == nil || store.IsNotFound(err) || store.IsConflict(err) {
		return nil // deleted, or already gone or replaced
	}
	return fmt.Errorf("delete pod %s: %w", reconcile.ObjectKey(p), err)
}

package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "node-lifecycle"

// EventComponent is the component the controller's events name as their
// source.
const EventComponent = "node-controller"

// Defaults of SPEC §2's server flags.
const (
	DefaultMonitorPeriod   = 5 * time.Second
	DefaultGracePeriod     = 40 * time.Second
	DefaultEvictionTimeout = 5 * time.Second
)

// passKey is the controller's only key: a pass looks at every node at once,
// because whether to evict depends on whether every node is dark.
const passKey = "nodes"

var (
	nodeKind  = api.KindOf(&api.Node{})
	podKind   = api.KindOf(&api.Pod{})
	leaseKind = api.KindOf(&api.Lease{})
)

// Options configure the controller; zero durations take SPEC's defaults.
type Options struct {
	// MonitorPeriod is how often every node's heartbeat is checked.
	MonitorPeriod time.Duration
	// GracePeriod and EvictionTimeout: see Config.
	GracePeriod     time.Duration
	EvictionTimeout time.Duration
	Clock           clock.WithTicker
	Backoff         reconcile.Backoff
	Logger          *slog.Logger
	// Events records the controller's events, in the transactions of the
	// actions they report; nil: a writer of the controller's own (tests).
	Events *event.Recorder
}

func (o *Options) defaults() {
	if o.MonitorPeriod <= 0 {
		o.MonitorPeriod = DefaultMonitorPeriod
	}
	if o.GracePeriod <= 0 {
		o.GracePeriod = DefaultGracePeriod
	}
	if o.EvictionTimeout <= 0 {
		o.EvictionTimeout = DefaultEvictionTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Reconciler runs one pass over every node: it assesses them and applies
// the plan through store transactions.
type Reconciler struct {
	store *store.Store
	clock clock.PassiveClock
	cfg   Config
	// events writes inside the transaction of each action.
	events *event.Recorder

	mu    sync.Mutex
	state State
}

// NewReconciler returns the Reconciler alone, for tests and for callers
// that run it under their own Controller; opts.MonitorPeriod is unused.
func NewReconciler(s *store.Store, opts Options) *Reconciler {
	opts.defaults()
	if opts.Events == nil {
		opts.Events = event.NewWriter(s, event.Options{Clock: opts.Clock, Logger: opts.Logger}).Recorder(EventComponent, "")
	}
	return &Reconciler{store: s, clock: opts.Clock, cfg: Config{GracePeriod: opts.GracePeriod, EvictionTimeout: opts.EvictionTimeout},
		events: opts.Events}
}

// NewController returns the node lifecycle controller: a pass every
// MonitorPeriod on its clock, and at once when a node appears, goes or
// changes its Ready status. Run it with Controller.Run(ctx, workers).
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	opts.defaults()
	r := NewReconciler(s, opts)
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock:        opts.Clock,
		Backoff:      opts.Backoff,
		Logger:       opts.Logger,
		ListKeys:     func(context.Context) ([]string, error) { return []string{passKey}, nil },
		ResyncPeriod: opts.MonitorPeriod,
		Store:        s,
		Watches:      []reconcile.Watch{{Kind: nodeKind, Keys: nodeKeys}},
	})
}

// nodeKeys asks for a pass when a change can alter the plan before the
// next period: a node added or removed, or its Ready status, cordon or
// pressure conditions changed. A mere heartbeat does not, so that a large
// fleet costs one pass a period.
//
// Nor does a node that joins Ready, neither cordoned nor under pressure,
// without a taint of the controller's: the pass would only note its
// heartbeat, which the next periodic pass does as well. Passing at every
// join made a fleet's joining quadratic (5,000 nodes joining: 5,000 passes
// over up to 5,000 nodes).
func nodeKeys(e store.Event) []string {
	n := e.Object.(*api.Node)
	switch {
	case e.Type == store.Modified && e.Old != nil:
		old := e.Old.(*api.Node)
		if nodeReady(old) == nodeReady(n) && conditionTaintSet(old.Spec.Unschedulable, old.Status.Conditions) == conditionTaintSet(n.Spec.Unschedulable, n.Status.Conditions) {
			return nil
		}
	case e.Type == store.Added && nodeReady(n) == api.ConditionTrue && !slices.ContainsFunc(n.Spec.Taints, isManaged) &&
		conditionTaintSet(n.Spec.Unschedulable, n.Status.Conditions) == 0:
		return nil
	}
	return []string{passKey}
}

// Reconcile runs one pass. Writes that meet a conflict (an agent posted
// status in between) are skipped and the pass is retried with back-off.
func (r *Reconciler) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	snap := r.store.Snapshot()
	objs, err := snap.List(nodeKind, store.Filter{})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("list nodes: %w", err)
	}
	now := r.clock.Now()
	nodes := make([]*api.Node, len(objs))
	for i, o := range objs {
		nodes[i] = o.(*api.Node)
	}
	renewals, err := leaseRenewals(snap)
	if err != nil {
		return reconcile.Result{}, err
	}
	var listErr error
	podsOf := func(node string) []*api.Pod {
		objs, err := snap.List(podKind, store.Filter{Index: store.IndexNode, Value: node})
		if err != nil {
			listErr = fmt.Errorf("list pods of node %s: %w", node, err)
		}
		pods := make([]*api.Pod, len(objs))
		for i, o := range objs {
			pods[i] = o.(*api.Pod)
		}
		return pods
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	plan := assess(nodes, renewals, podsOf, now, r.cfg, r.state)
	if listErr != nil {
		return reconcile.Result{}, listErr
	}
	r.state = plan.State
	var errs []error
	for _, a := range plan.Actions {
		if err := r.apply(ctx, a); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	if !plan.Wake.IsZero() {
		res.RequeueAfter = max(plan.Wake.Sub(now), time.Millisecond)
	}
	return res, nil
}

// leaseRenewals reads when each node's agent last renewed its Lease in
// kube-node-lease, by node name. A renewal is not a change the controller
// watches: like a heartbeat on the Node, it is read by the periodic pass.
func leaseRenewals(snap *store.Snapshot) (map[string]time.Time, error) {
	objs, err := snap.List(leaseKind, store.Filter{Namespace: api.NamespaceNodeLease})
	if err != nil {
		return nil, fmt.Errorf("list node leases: %w", err)
	}
	renewals := make(map[string]time.Time, len(objs))
	for _, o := range objs {
		if l := o.(*api.Lease); l.Spec.RenewTime != nil {
			renewals[l.Name] = l.Spec.RenewTime.Time
		}
	}
	return renewals, nil
}

// apply writes one action and its event in one transaction.
func (r *Reconciler) apply(ctx context.Context, a Action) error {
	_, err := r.store.Txn(ctx, func(tx *store.Txn) error {
		switch a.Type {
		case UpdateNode, UpdatePod:
			// The copy carries the resourceVersion it was read at: a
			// change since then is a conflict, and the pass runs again.
			if _, err := tx.Update(a.Object); err != nil {
				return err
			}
		case EvictPod:
			pod := a.Object.(*api.Pod)
			// The node may have come back, or lost the taint, since the
			// snapshot.
			if obj, err := tx.Get(nodeKind, "", pod.Spec.NodeName); err == nil {
				n := obj.(*api.Node)
				if indexTaint(n.Spec.Taints, a.Taint) < 0 || (isManaged(a.Taint) && nodeReady(n) == api.ConditionTrue) {
					return nil
				}
			}
			_, err := tx.Delete(podKind, pod.Namespace, pod.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(pod.UID)}})
			if err != nil {
				return err
			}
		}
		if a.Event.Reason == "" {
			return nil
		}
		// The event commits with the change it reports, correlated with the
		// ones before it; a node's goes to the default namespace, as in
		// Kubernetes.
		return r.events.Record(tx, a.Object, a.Event.Type, a.Event.Reason, a.Event.Message)
	})
	switch {
	case err == nil:
		return nil
	case store.IsNotFound(err) || (a.Type == EvictPod && store.IsConflict(err)):
		return nil // gone, or replaced by another pod of that name: nothing to do
	}
	return fmt.Errorf("%s %s %s: %w", a.Type, api.KindOf(a.Object).GVK.Kind, reconcile.ObjectKey(a.Object), err)
}

package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "disruption"

// EventComponent is the source of the controller's events, as
// Kubernetes' controller manager names it.
const EventComponent = "controllermanager"

// Event reasons, as Kubernetes' disruption controller records them.
const (
	ReasonNoPods                          = "NoPods"
	ReasonUnmanagedPods                   = "UnmanagedPods"
	ReasonCalculateExpectedPodCountFailed = "CalculateExpectedPodCountFailed"
	ReasonNotDeleted                      = "NotDeleted"
)

var (
	budgetKind     = api.KindOf(&api.PodDisruptionBudget{})
	podKind        = api.KindOf(&api.Pod{})
	rcKind         = api.KindOf(&api.ReplicationController{})
	rsKind         = api.KindOf(&api.ReplicaSet{})
	deploymentKind = api.KindOf(&api.Deployment{})
	setKind        = api.KindOf(&api.StatefulSet{})
)

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	// Events receives NoPods, UnmanagedPods and the like; nil records
	// nothing.
	Events *event.Recorder
}

// Reconciler counts the pods of one budget, named by its key, into its
// status.
type Reconciler struct {
	store  *store.Store
	clock  clock.PassiveClock
	events *event.Recorder
}

// NewReconciler returns the Reconciler alone, for tests and for callers
// that run it under their own Controller.
func NewReconciler(s *store.Store, opts Options) *Reconciler {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Reconciler{store: s, clock: opts.Clock, events: opts.Events}
}

// NewController returns the disruption controller, fed by watches on
// budgets, the pods they select and the replicas of the pods'
// controllers. Run it with Controller.Run(ctx, workers).
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	r := NewReconciler(s, opts)
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: r.Watches(),
	})
}

// Watches are a budget's own changes, a pod's changes to the budgets
// that select it (before or after the change), and a change of the
// replicas of a ReplicationController, ReplicaSet, Deployment or
// StatefulSet to every
// budget of its namespace, whose expected pods it may count.
func (r *Reconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{Kind: budgetKind},
		{Kind: podKind, Keys: r.podKeys},
		{Kind: rcKind, Keys: r.scaleKeys},
		{Kind: rsKind, Keys: r.scaleKeys},
		{Kind: deploymentKind, Keys: r.scaleKeys},
		{Kind: setKind, Keys: r.scaleKeys},
	}
}

// podKeys are the budgets that select the pod, as it is or as it was.
func (r *Reconciler) podKeys(e store.Event) []string {
	pod, _ := e.Object.(*api.Pod)
	old, _ := e.Old.(*api.Pod)
	if pod == nil {
		return nil
	}
	var keys []string
	_ = r.store.Snapshot().Each(budgetKind, store.Filter{Namespace: pod.Namespace}, func(o api.Object) bool {
		b := o.(*api.PodDisruptionBudget)
		if b.Selects(pod) || (old != nil && b.Selects(old)) {
			keys = append(keys, reconcile.ObjectKey(b))
		}
		return true
	})
	return keys
}

// scaleKeys are every budget of the namespace of a controller whose
// replicas changed (or which came or went).
func (r *Reconciler) scaleKeys(e store.Event) []string {
	if e.Type == store.Modified && replicasOf(e.Object) == replicasOf(e.Old) {
		return nil
	}
	var keys []string
	_ = r.store.Snapshot().Each(budgetKind, store.Filter{Namespace: e.Object.GetNamespace()}, func(o api.Object) bool {
		keys = append(keys, reconcile.ObjectKey(o))
		return true
	})
	return keys
}

// replicasOf is the replicas a controller wants (1 when unset, as
// defaulted), or -1 for an object that is not one.
func replicasOf(o api.Object) int32 {
	var r *int32
	switch c := o.(type) {
	case *api.ReplicationController:
		r = c.Spec.Replicas
	case *api.ReplicaSet:
		r = c.Spec.Replicas
	case *api.Deployment:
		r = c.Spec.Replicas
	case *api.StatefulSet:
		r = c.Spec.Replicas
	default:
		return -1
	}
	if r == nil {
		return 1
	}
	return *r
}

// Reconcile counts the budget's pods and writes its status when the
// counts changed. A budget whose expected pods cannot be counted (a pod
// whose controller is missing) allows no disruption, with condition
// DisruptionAllowed False, reason SyncFailed, as Kubernetes fails safe.
// While pods an eviction let go are in disruptedPods, it looks again
// when the first of them times out.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	namespace, name := reconcile.SplitKey(key)
	snap := r.store.Snapshot()
	obj, err := snap.Get(budgetKind, namespace, name)
	if store.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("poddisruptionbudget %s: %w", key, err)
	}
	b := obj.(*api.PodDisruptionBudget)
	var pods []*api.Pod
	if err := snap.Each(podKind, store.Filter{Namespace: namespace}, func(o api.Object) bool {
		if pod := o.(*api.Pod); b.Selects(pod) {
			pods = append(pods, pod)
		}
		return true
	}); err != nil {
		return reconcile.Result{}, fmt.Errorf("poddisruptionbudget %s: %w", key, err)
	}
	if len(pods) == 0 {
		r.events.Event(b, api.EventTypeNormal, ReasonNoPods, "No matching pods found")
	}
	now := r.clock.Now()
	expected, desired, unmanaged, err := expectedPods(b, pods, snapshotScale(snap))
	if err != nil {
		r.events.Eventf(b, api.EventTypeWarning, ReasonCalculateExpectedPodCountFailed, "Failed to calculate the number of expected pods: %v", err)
		return reconcile.Result{}, r.failSafe(ctx, b, err, now)
	}
	if len(unmanaged) > 0 {
		r.events.Eventf(b, api.EventTypeWarning, ReasonUnmanagedPods, "Pods selected by this PodDisruptionBudget (selector: %s) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", metav1.FormatLabelSelector(b.Spec.Selector))
	}
	kept, expired, recheck := disruptedPods(b, pods, now)
	for _, pod := range pods {
		for _, name := range expired {
			if pod.Name == name {
				r.events.Eventf(pod, api.EventTypeWarning, ReasonNotDeleted, "Pod was expected by PDB %s/%s to be deleted but it wasn't", b.Namespace, b.Name)
			}
		}
	}
	healthy := countHealthy(pods, kept, now)
	if err := r.writeStatus(ctx, b, nextStatus(b, healthy, desired, expected, kept), now); err != nil {
		return reconcile.Result{}, err
	}
	if recheck.IsZero() {
		return reconcile.Result{}, nil
	}
	// Just past the deadline, when the entry is expired rather than due.
	return reconcile.Result{RequeueAfter: recheck.Sub(now) + time.Nanosecond}, nil
}

// nextStatus is the status the counts make, keeping the conditions for
// writeStatus to set.
func nextStatus(b *api.PodDisruptionBudget, healthy, desired, expected int32, disrupted map[string]metav1.Time) api.PodDisruptionBudgetStatus {
	if len(disrupted) == 0 {
		disrupted = nil
	}
	return api.PodDisruptionBudgetStatus{
		ObservedGeneration: b.Generation,
		DisruptedPods:      disrupted,
		DisruptionsAllowed: disruptionsAllowed(healthy, desired, expected),
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		ExpectedPods:       expected,
		Conditions:         b.Status.Conditions,
	}
}

// writeStatus writes the budget with status next and its condition set
// from it, guarded by the resourceVersion it was read at: an eviction
// that spent a disruption meanwhile makes it a conflict, and the retry
// counts again. The store writes nothing when nothing changed.
func (r *Reconciler) writeStatus(ctx context.Context, b *api.PodDisruptionBudget, next api.PodDisruptionBudgetStatus, now time.Time) error {
	nb := b.DeepCopy()
	nb.Status = next
	nb.Status.Conditions = append([]metav1.Condition(nil), b.Status.Conditions...)
	nb.SetDisruptionAllowed(now)
	if _, err := r.store.Update(ctx, nb); err != nil {
		return fmt.Errorf("update poddisruptionbudget %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// failSafe allows no disruption when the budget's pods cannot be
// counted, saying why in the condition.
func (r *Reconciler) failSafe(ctx context.Context, b *api.PodDisruptionBudget, cause error, now time.Time) error {
	nb := b.DeepCopy()
	nb.Status.DisruptionsAllowed = 0
	c := metav1.Condition{
		Type:               api.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             api.SyncFailedReason,
		Message:            cause.Error(),
		ObservedGeneration: nb.Status.ObservedGeneration,
		LastTransitionTime: metav1.NewTime(now),
	}
	apimeta.SetStatusCondition(&nb.Status.Conditions, c)
	if _, err := r.store.Update(ctx, nb); err != nil {
		return fmt.Errorf("update poddisruptionbudget %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// snapshotScale finds a pod's controller in a snapshot, as Kubernetes'
// finders do: a StatefulSet, a ReplicationController, a Deployment through the
// ReplicaSet it controls, or a ReplicaSet no Deployment controls; the
// UID must be the reference's.
func snapshotScale(snap *store.Snapshot) scaleFunc {
	get := func(k *api.Kind, namespace, name string, uid types.UID) api.Object {
		o, err := snap.Get(k, namespace, name)
		if err != nil || o.GetUID() != uid {
			return nil
		}
		return o
	}
	return func(namespace string, ref *metav1.OwnerReference) (types.UID, int32, bool) {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return "", 0, false
		}
		switch {
		case ref.Kind == "StatefulSet" && gv.Group == "apps":
			if set := get(setKind, namespace, ref.Name, ref.UID); set != nil {
				return set.GetUID(), replicasOf(set), true
			}
		case ref.Kind == "ReplicationController" && gv.Group == "":
			if rc := get(rcKind, namespace, ref.Name, ref.UID); rc != nil {
				return rc.GetUID(), replicasOf(rc), true
			}
		case ref.Kind == "ReplicaSet" && (gv.Group == "apps" || gv.Group == "extensions"):
			rs := get(rsKind, namespace, ref.Name, ref.UID)
			if rs == nil {
				return "", 0, false
			}
			owner := api.ControllerOf(rs)
			if owner == nil {
				return rs.GetUID(), replicasOf(rs), true
			}
			if og, err := schema.ParseGroupVersion(owner.APIVersion); err == nil && owner.Kind == "Deployment" && (og.Group == "apps" || og.Group == "extensions") {
				if d := get(deploymentKind, namespace, owner.Name, owner.UID); d != nil {
					return d.GetUID(), replicasOf(d), true
				}
			}
			if owner.Kind != "Deployment" {
				return rs.GetUID(), replicasOf(rs), true
			}
		}
		return "", 0, false
	}
}

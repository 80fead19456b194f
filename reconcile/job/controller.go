package job

import (
	"log/slog"
	"sync"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "job"

// EventComponent is the source of the controller's events, as Kubernetes
// names it.
const EventComponent = "job-controller"

var podKind = api.MustLookupResource("pods")

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	// Events receives what the controller does (SuccessfulCreate,
	// Completed, BackoffLimitExceeded, …); nil records nothing.
	Events reconcile.EventRecorder
}

// NewController returns the Job controller, fed by watches on Jobs and
// Pods. Run it with Controller.Run(ctx, workers).
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	var c clock.PassiveClock
	if opts.Clock != nil {
		c = opts.Clock
	}
	r := NewReconciler(s, c)
	if opts.Events != nil {
		r.events = opts.Events
	}
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: r.Watches(),
	})
}

// Reconciler converges one Job, named by its key.
type Reconciler struct {
	store        *store.Store
	clock        clock.PassiveClock
	events       reconcile.EventRecorder
	expectations *reconcile.Expectations
	// backoffs remember, per Job key, the failures since the last success
	// and when the last one was, as Kubernetes' backoffRecordStore: they
	// pace new pods, and are lost with the process, as there.
	mu       sync.Mutex
	backoffs map[string]backoffRecord
}

// NewReconciler returns the Reconciler alone, for tests and for callers
// that run it under their own Controller. A nil clock is the real one.
func NewReconciler(s *store.Store, c clock.PassiveClock) *Reconciler {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Reconciler{store: s, clock: c, events: reconcile.NoEvents{}, expectations: reconcile.NewExpectations(c),
		backoffs: map[string]backoffRecord{}}
}

// Watches are the store watches that feed the controller: Jobs, and pods,
// which concern the Job that controls them.
func (r *Reconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{Kind: jobKind},
		{Kind: podKind, Keys: r.PodKeys},
	}
}

// PodKeys maps a pod change to the key of its Job, and settles the
// expectations it satisfies. A pod whose Job is gone still maps to the
// Job's key while it holds the tracking finalizer, for the Reconciler to
// release it. Tests that call Reconcile directly feed it the store's
// events to play the watch.
func (r *Reconciler) PodKeys(e store.Event) []string {
	pod := e.Object.(*api.Pod)
	ref := api.ControllerOf(pod)
	if ref == nil && e.Type != store.Deleted && tracked(pod) && pod.Labels[api.LabelJobName] != "" {
		// Orphaned (kubectl delete --cascade=orphan) while still held:
		// the Job's key, for its finalizer to be dropped.
		return []string{reconcile.Key(pod.Namespace, pod.Labels[api.LabelJobName])}
	}
	if ref == nil || ref.Kind != jobKind.GVK.Kind {
		return nil
	}
	key := reconcile.Key(pod.Namespace, ref.Name)
	switch e.Type {
	case store.Added:
		r.expectations.CreationObserved(key)
	case store.Modified:
		if old, ok := e.Old.(*api.Pod); ok && sameForJob(old, pod) {
			return nil
		}
	}
	return []string{key}
}

// sameForJob reports whether a pod change leaves alone what a Job's sync
// reads: phase, deletion, finalizers, readiness and restarts.
func sameForJob(old, pod *api.Pod) bool {
	return old.Status.Phase == pod.Status.Phase &&
		(old.DeletionTimestamp == nil) == (pod.DeletionTimestamp == nil) &&
		len(old.Finalizers) == len(pod.Finalizers) &&
		old.Ready() == pod.Ready() && restarts(old) == restarts(pod)
}

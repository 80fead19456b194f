package workload

import (
	"log/slog"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Controller names in logs.
const (
	ReplicaSetName            = "replicaset"
	ReplicationControllerName = "replicationcontroller"
)

// Options configure the controllers; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	// Events receives what the controllers do (SuccessfulCreate,
	// ScalingReplicaSet, …); nil records nothing.
	Events reconcile.EventRecorder
}

func eventsOr(e reconcile.EventRecorder) reconcile.EventRecorder {
	if e == nil {
		return reconcile.NoEvents{}
	}
	return e
}

// NewReplicaSetController returns the ReplicaSet controller, fed by
// watches on ReplicaSets and Pods. Run it with Controller.Run(ctx, workers).
func NewReplicaSetController(s *store.Store, opts Options) *reconcile.Controller {
	return newReplicaController(ReplicaSetName, s, replicaSets, opts)
}

// NewReplicationControllerController is NewReplicaSetController for
// ReplicationControllers.
func NewReplicationControllerController(s *store.Store, opts Options) *reconcile.Controller {
	return newReplicaController(ReplicationControllerName, s, replicationControllers, opts)
}

func newReplicaController(name string, s *store.Store, k *replicatedKind, opts Options) *reconcile.Controller {
	var c clock.PassiveClock
	if opts.Clock != nil {
		c = opts.Clock
	}
	r := newReplicaReconciler(s, k, c)
	r.events = eventsOr(opts.Events)
	return reconcile.NewController(name, r, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: r.Watches(),
	})
}

// Watches are the store watches that feed the controller: its own kind,
// and pods, which concern their controller (settling its expectations)
// or, for orphans, every controller of the kind whose selector matches.
func (r *ReplicaReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{Kind: r.kind.kind},
		{Kind: podKind, Keys: r.PodKeys},
	}
}

// PodKeys maps a pod change to the keys of the controllers it concerns, and
// settles the expectations it satisfies. Tests that call Reconcile directly
// feed it the store's events to play the watch.
func (r *ReplicaReconciler) PodKeys(e store.Event) []string {
	pod := e.Object.(*api.Pod)
	podKey := reconcile.ObjectKey(pod)
	keys := map[string]struct{}{}
	owner := r.ownerKey(pod)
	switch e.Type {
	case store.Added:
		if owner != "" {
			if pod.DeletionTimestamp != nil {
				r.expectations.DeletionObserved(owner, podKey)
			} else {
				r.expectations.CreationObserved(owner)
			}
		}
	case store.Modified:
		var old *api.Pod
		if e.Old != nil {
			old = e.Old.(*api.Pod)
		}
		if old != nil && sameForController(old, pod) {
			// A binding, a container status: nothing a sync reads
			// changed. Every pod of a large ReplicaSet changes several
			// times, and each sync reads all of them.
			return nil
		}
		if owner != "" && pod.DeletionTimestamp != nil && (old == nil || old.DeletionTimestamp == nil) {
			r.expectations.DeletionObserved(owner, podKey)
		}
		if old != nil {
			if oldOwner := r.ownerKey(old); oldOwner != "" && oldOwner != owner {
				keys[oldOwner] = struct{}{}
			}
			if api.ControllerOf(pod) == nil && !maps.Equal(old.Labels, pod.Labels) {
				r.matching(old, keys)
			}
		}
	case store.Deleted:
		if owner != "" {
			r.expectations.DeletionObserved(owner, podKey)
		}
	}
	if owner != "" {
		keys[owner] = struct{}{}
	} else if e.Type != store.Deleted && api.ControllerOf(pod) == nil {
		r.matching(pod, keys)
	}
	return slices.Sorted(maps.Keys(keys))
}

// sameForController reports whether a pod change leaves alone everything
// a ReplicaSet's sync reads of the pod: whether it is active or
// terminating (phase, deletion), its labels and owners (claiming), and its
// readiness and since when (the ready and available counts).
func sameForController(old, pod *api.Pod) bool {
	if isActive(old) != isActive(pod) || isTerminating(old) != isTerminating(pod) ||
		(old.DeletionTimestamp == nil) != (pod.DeletionTimestamp == nil) ||
		!maps.Equal(old.Labels, pod.Labels) || !slices.EqualFunc(old.OwnerReferences, pod.OwnerReferences, sameOwnerRef) {
		return false
	}
	oc, nc := readyCondition(old), readyCondition(pod)
	if (oc == nil) != (nc == nil) {
		return false
	}
	return oc == nil || (oc.Status == nc.Status && oc.LastTransitionTime.Equal(&nc.LastTransitionTime))
}

func sameOwnerRef(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.Kind == b.Kind && a.Name == b.Name &&
		(a.Controller != nil && *a.Controller) == (b.Controller != nil && *b.Controller)
}

// ownerKey is the key of the pod's controller if it is of r's kind.
func (r *ReplicaReconciler) ownerKey(pod *api.Pod) string {
	ref := api.ControllerOf(pod)
	if ref == nil || ref.Kind != r.kind.kind.GVK.Kind {
		return ""
	}
	return reconcile.Key(pod.Namespace, ref.Name)
}

// matching adds the keys of the controllers in the pod's namespace whose
// selector matches its labels: the ones that may adopt it.
func (r *ReplicaReconciler) matching(pod *api.Pod, keys map[string]struct{}) {
	_ = r.store.Snapshot().Each(r.kind.kind, store.Filter{Namespace: pod.Namespace}, func(obj api.Object) bool {
		v, err := r.kind.view(obj)
		if err == nil && v.selector.Matches(labels.Set(pod.Labels)) {
			keys[reconcile.ObjectKey(obj)] = struct{}{}
		}
		return true
	})
}

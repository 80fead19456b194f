package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// claimPods returns the pods v controls, after adopting the orphans its
// selector matches and releasing the pods it controls that no longer
// match, as Kubernetes' PodControllerRefManager. A controller being
// deleted neither adopts nor releases.
func (r *ReplicaReconciler) claimPods(ctx context.Context, v *replicated) ([]*api.Pod, error) {
	ns, uid := v.obj.GetNamespace(), v.obj.GetUID()
	owned, _, err := r.store.List(podKind, store.Filter{Namespace: ns, Index: store.IndexOwner, Value: string(uid)})
	if err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", describe(v), err)
	}
	// Only orphans may be adopted: the orphan index leaves out the pods
	// with a controller, so that this is not a scan of every pod of the
	// namespace on each sync.
	matching, _, err := r.store.List(podKind, store.Filter{Namespace: ns, Index: store.IndexOrphan, Value: ns, Labels: v.selector, Predicate: isOrphan})
	if err != nil {
		return nil, fmt.Errorf("list pods matching %s: %w", describe(v), err)
	}
	deleting := v.obj.GetDeletionTimestamp() != nil
	var (
		claimed []*api.Pod
		errs    []error
		// seen is needed only to tell the orphans from the pods just
		// listed, and there are rarely any orphans.
		seen map[string]bool
	)
	if len(matching) > 0 {
		seen = make(map[string]bool, len(owned))
	}
	for _, obj := range owned {
		pod := obj.(*api.Pod)
		if !controlledBy(pod, uid) {
			continue
		}
		if seen != nil {
			seen[pod.Name] = true
		}
		if v.selector.Matches(labels.Set(pod.Labels)) || deleting {
			claimed = append(claimed, pod)
			continue
		}
		if err := r.release(ctx, pod, uid); err != nil {
			errs = append(errs, err)
		}
	}
	for _, obj := range matching {
		pod := obj.(*api.Pod)
		if seen[pod.Name] || api.ControllerOf(pod) != nil || deleting || pod.DeletionTimestamp != nil {
			continue
		}
		adopted, err := r.adopt(ctx, v, pod)
		switch {
		case store.IsNotFound(err):
		case err != nil:
			errs = append(errs, err)
		default:
			claimed = append(claimed, adopted)
		}
	}
	return claimed, errors.Join(errs...)
}

// controlledBy reports whether uid is the pod's controller, as
// api.ControllerOf would tell, without copying the reference: this runs
// for every pod of a controller on every sync.
func controlledBy(pod *api.Pod, uid types.UID) bool {
	for i := range pod.OwnerReferences {
		if ref := &pod.OwnerReferences[i]; ref.Controller != nil && *ref.Controller {
			return ref.UID == uid
		}
	}
	return false
}

// isOrphan reports whether a pod has no controller and is not being
// deleted: one a controller may adopt.
func isOrphan(o api.Object) bool {
	return api.ControllerOf(o) == nil && o.GetDeletionTimestamp() == nil
}

// adopt makes v the controller of an orphan pod.
func (r *ReplicaReconciler) adopt(ctx context.Context, v *replicated, pod *api.Pod) (*api.Pod, error) {
	p := pod.DeepCopy()
	p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(v.obj, r.kind.kind.GVK))
	obj, err := r.store.Update(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("adopt pod %s/%s into %s: %w", pod.Namespace, pod.Name, describe(v), err)
	}
	return obj.(*api.Pod), nil
}

// release drops the ownerReference to uid from a pod that no longer
// matches its controller's selector.
func (r *ReplicaReconciler) release(ctx context.Context, pod *api.Pod, uid types.UID) error {
	p := pod.DeepCopy()
	p.OwnerReferences = slices.DeleteFunc(p.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == uid })
	if _, err := r.store.Update(ctx, p); err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("release pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func describe(v *replicated) string {
	return api.KindOf(v.obj).GVK.Kind + "/" + v.obj.GetNamespace() + "/" + v.obj.GetName()
}

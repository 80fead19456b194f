package volume

import (
	"context"
	"fmt"
	"slices"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// syncVolume converges one volume: its phase follows its claim, and once
// the claim is gone its reclaim policy runs.
func (r *Reconciler) syncVolume(ctx context.Context, name string) (reconcile.Result, error) {
	obj, err := r.store.Get(volumeKind, "", name)
	if store.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get volume %s: %w", name, err)
	}
	pv := obj.(*api.PersistentVolume)
	deleting := pv.DeletionTimestamp != nil
	if deleting && (pv.Spec.ClaimRef == nil || slices.Contains(pv.Finalizers, api.FinalizerLocalPath)) {
		// Its node's agent removes the directory, then the finalizer; if
		// the node is gone, say so rather than wait without a word.
		return r.watchDeletion(ctx, pv)
	}
	// A volume deleted while bound is held by its protection finalizer:
	// its phase still follows its claim, and once the claim is gone its
	// reclaim policy runs, as for any other.
	ref := pv.Spec.ClaimRef
	if ref == nil {
		if pv.Status.Phase == api.VolumeAvailable {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, r.setPhase(ctx, pv, api.VolumeAvailable, "")
	}
	var claim *api.PersistentVolumeClaim
	if o, err := r.store.Get(claimKind, ref.Namespace, ref.Name); err == nil {
		claim = o.(*api.PersistentVolumeClaim)
	} else if !store.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("get claim %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	switch {
	case ref.UID == "":
		// Pre-bound by a user to a claim that may not exist yet.
		if claim != nil && !deleting {
			r.enqueue(prefixClaim + reconcile.ObjectKey(claim))
		}
		if deleting || pv.Status.Phase == api.VolumeAvailable {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, r.setPhase(ctx, pv, api.VolumeAvailable, "")
	case claim != nil && string(claim.UID) == ref.UID:
		switch claim.Spec.VolumeName {
		case "":
			// The first step of a binding: the claim's sync finishes it.
			r.enqueue(prefixClaim + reconcile.ObjectKey(claim))
		case pv.Name:
		default:
			// The claim went to another volume; free this one if the
			// controller bound it.
			if pv.Annotations[api.AnnotationBoundByController] != "" {
				v := pv.DeepCopy()
				v.Spec.ClaimRef = nil
				delete(v.Annotations, api.AnnotationBoundByController)
				setVolumePhase(v, api.VolumeAvailable, "", r.clock.Now())
				if _, err := r.store.Update(ctx, v); err != nil {
					return reconcile.Result{}, fmt.Errorf("unbind volume %s: %w", pv.Name, err)
				}
			}
			return reconcile.Result{}, nil
		}
		if pv.Status.Phase == api.VolumeBound {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, r.setPhase(ctx, pv, api.VolumeBound, "")
	}
	return r.reclaim(ctx, pv)
}

// setPhase writes a volume's phase and message.
func (r *Reconciler) setPhase(ctx context.Context, pv *api.PersistentVolume, phase api.PersistentVolumePhase, msg string) error {
	v := pv.DeepCopy()
	setVolumePhase(v, phase, msg, r.clock.Now())
	if _, err := r.store.Update(ctx, v); err != nil {
		return fmt.Errorf("set volume %s %s: %w", pv.Name, phase, err)
	}
	return nil
}

// reclaim runs the reclaim policy of a volume whose claim is gone.
// Retain leaves it Released. Delete and Recycle need the agent of the
// volume's node: the controller labels the volume for it and either
// deletes the volume behind a finalizer the agent removes once the
// directory is gone, or asks for a wipe the agent acknowledges, after
// which the volume is Available again. A volume whose node is gone for
// longer than the grace period is marked Failed instead of waiting
// forever.
//
// The volume is released in the write that hands it on (or fails it),
// not before: a volume being deleted is held only by its protection
// finalizer until it is not Bound, and must be behind the local-path
// finalizer by then, or it would go with its directory left behind.
func (r *Reconciler) reclaim(ctx context.Context, pv *api.PersistentVolume) (reconcile.Result, error) {
	// release: the volume is to be marked Released, in the write that
	// hands it on or fails it, or alone when nothing else is written.
	release := pv.Status.Phase != api.VolumeReleased && pv.Status.Phase != api.VolumeFailed
	if release {
		pv = pv.DeepCopy()
		setVolumePhase(pv, api.VolumeReleased, "", r.clock.Now())
	}
	released := func(res reconcile.Result) (reconcile.Result, error) {
		if !release {
			return res, nil
		}
		if _, err := r.store.Update(ctx, pv); err != nil {
			return reconcile.Result{}, fmt.Errorf("release volume %s: %w", pv.Name, err)
		}
		return res, nil
	}
	policy := pv.Spec.PersistentVolumeReclaimPolicy
	if pv.Status.Phase == api.VolumeFailed || policy == api.PersistentVolumeReclaimRetain || policy == "" {
		return released(reconcile.Result{})
	}
	failReason := ReasonVolumeFailedDelete
	if policy == api.PersistentVolumeReclaimRecycle {
		failReason = ReasonVolumeFailedRecycle
	}
	node := api.LocalVolumeNode(pv)
	if node == "" || (pv.Spec.Local == nil && pv.Spec.HostPath == nil) {
		return reconcile.Result{}, r.fail(ctx, pv, failReason,
			fmt.Sprintf("reclaim policy %s needs a local or hostPath volume with node affinity to one node", policy))
	}
	nodeObj, err := r.store.Get(nodeKind, "", node)
	if store.IsNotFound(err) {
		since := r.clock.Now()
		if t := pv.Status.LastPhaseTransitionTime; t != nil {
			since = t.Time
		}
		if wait := r.grace - r.clock.Since(since); wait > 0 {
			return released(reconcile.Result{RequeueAfter: wait})
		}
		return reconcile.Result{}, r.fail(ctx, pv, failReason,
			fmt.Sprintf("node %s is gone: cannot %s the volume's directory %s", node, verbOf(policy), api.LocalVolumePath(pv)))
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("get node %s: %w", node, err)
	}
	if !api.LocalPathReclaimable(pv, nodeObj.(*api.Node).Annotations[api.AnnotationLocalPathRoot]) {
		return reconcile.Result{}, r.fail(ctx, pv, failReason, fmt.Sprintf(
			"reclaim policy %s is supported only for volumes the local-path provisioner made or under the node's local-path root; %s is neither",
			policy, api.LocalVolumePath(pv)))
	}
	if policy == api.PersistentVolumeReclaimRecycle {
		if !release && pv.Annotations[api.AnnotationRecycle] == pv.Spec.ClaimRef.UID && pv.Labels[api.LabelReclaimNode] == node &&
			pv.Annotations[api.AnnotationRecycled] != pv.Spec.ClaimRef.UID {
			return reconcile.Result{}, nil // the agent is on it
		}
		return reconcile.Result{}, r.recycle(ctx, pv, node)
	}
	return reconcile.Result{}, r.delete(ctx, pv, node)
}

func verbOf(p api.PersistentVolumeReclaimPolicy) string {
	if p == api.PersistentVolumeReclaimRecycle {
		return "wipe"
	}
	return "delete"
}

// fail marks a volume Failed with a message and says so in an event.
func (r *Reconciler) fail(ctx context.Context, pv *api.PersistentVolume, reason, msg string) error {
	v := pv.DeepCopy()
	setVolumePhase(v, api.VolumeFailed, msg, r.clock.Now())
	v.Status.Reason = reason
	if _, err := r.store.Update(ctx, v); err != nil {
		return fmt.Errorf("fail volume %s: %w", pv.Name, err)
	}
	r.events.Event(v, api.EventTypeWarning, reason, msg)
	return nil
}

// delete hands a released volume to its node's agent: labelled for the
// agent and held by the local-path finalizer, it is deleted in the same
// transaction; the agent removes the directory and then the finalizer.
func (r *Reconciler) delete(ctx context.Context, pv *api.PersistentVolume, node string) error {
	_, err := r.store.Txn(ctx, func(tx *store.Txn) error {
		v := pv.DeepCopy()
		markForNode(v, node)
		if !slices.Contains(v.Finalizers, api.FinalizerLocalPath) {
			v.Finalizers = append(v.Finalizers, api.FinalizerLocalPath)
		}
		if _, err := tx.Update(v); err != nil {
			return err
		}
		_, err := tx.Delete(volumeKind, "", pv.Name, store.DeleteOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("delete volume %s: %w", pv.Name, err)
	}
	return nil
}

// recycle asks the node's agent to wipe a released volume, and once the
// agent says it did, makes the volume Available again.
func (r *Reconciler) recycle(ctx context.Context, pv *api.PersistentVolume, node string) error {
	uid := pv.Spec.ClaimRef.UID
	v := pv.DeepCopy()
	if pv.Annotations[api.AnnotationRecycled] == uid {
		v.Spec.ClaimRef = nil
		delete(v.Annotations, api.AnnotationRecycle)
		delete(v.Annotations, api.AnnotationRecycled)
		delete(v.Annotations, api.AnnotationBoundByController)
		delete(v.Labels, api.LabelReclaimNode)
		setVolumePhase(v, api.VolumeAvailable, "", r.clock.Now())
		if _, err := r.store.Update(ctx, v); err != nil {
			return fmt.Errorf("make recycled volume %s available: %w", pv.Name, err)
		}
		r.events.Event(v, api.EventTypeNormal, ReasonVolumeRecycled, "Volume recycled")
		return nil
	}
	markForNode(v, node)
	v.Annotations[api.AnnotationRecycle] = uid
	if _, err := r.store.Update(ctx, v); err != nil {
		return fmt.Errorf("ask node %s to recycle volume %s: %w", node, pv.Name, err)
	}
	return nil
}

// markForNode labels a volume for its node's agent.
func markForNode(pv *api.PersistentVolume, node string) {
	if pv.Labels == nil {
		pv.Labels = map[string]string{}
	}
	if pv.Annotations == nil {
		pv.Annotations = map[string]string{}
	}
	pv.Labels[api.LabelReclaimNode] = node
}

// watchDeletion looks after a volume being deleted behind the local-path
// finalizer: if its node has had no Node object for the grace period since
// the deletion, it is marked Failed with a message saying the directory
// could not be removed (the finalizer stays, for a user to remove once
// they have dealt with the disk).
func (r *Reconciler) watchDeletion(ctx context.Context, pv *api.PersistentVolume) (reconcile.Result, error) {
	if !slices.Contains(pv.Finalizers, api.FinalizerLocalPath) || pv.Status.Phase == api.VolumeFailed {
		return reconcile.Result{}, nil
	}
	node := api.LocalVolumeNode(pv)
	if _, err := r.store.Get(nodeKind, "", node); err == nil || !store.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if wait := r.grace - r.clock.Since(pv.DeletionTimestamp.Time); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return reconcile.Result{}, r.fail(ctx, pv, ReasonVolumeFailedDelete, fmt.Sprintf(
		"node %s is gone: cannot delete the volume's directory %s; remove the finalizer %s once the disk is dealt with",
		node, api.LocalVolumePath(pv), api.FinalizerLocalPath))
}

package volume

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// ProtectionName is the protection controller's name in logs.
const ProtectionName = "volume-protection"

// AdmitProtection is a store admission hook that puts the protection
// finalizer on every claim and volume as it is created, as Kubernetes'
// StorageObjectInUseProtection admission plugin does. It runs in the
// store, so claims and volumes from the API, from sources and from the
// provisioner alike are protected from their first revision on.
func AdmitProtection(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
	if old != nil || obj == nil {
		return nil
	}
	if f := protectionFinalizer(obj); f != "" && !slices.Contains(obj.GetFinalizers(), f) {
		// Clipped, so that the caller's array is never written.
		obj.SetFinalizers(append(slices.Clip(obj.GetFinalizers()), f))
	}
	return nil
}

// protectionFinalizer is the finalizer that protects obj, "" for kinds
// that have none.
func protectionFinalizer(obj api.Object) string {
	switch obj.(type) {
	case *api.PersistentVolumeClaim:
		return api.FinalizerPVCProtection
	case *api.PersistentVolume:
		return api.FinalizerPVProtection
	}
	return ""
}

// protector keeps the protection finalizers, as Kubernetes'
// pvc-protection and pv-protection controllers do: it adds the finalizer
// to a claim or volume that is not being deleted and lacks it (one stored
// before protection existed, or one a user stripped), and removes it from
// one being deleted once nothing needs it any more: for a claim, once no
// pod bound to a node and not finished uses it; for a volume, once it is
// not Bound.
type protector struct {
	store *store.Store
}

// NewProtectionController returns the controller that keeps the
// protection finalizers. It looks only at the claims and volumes whose
// finalizer is to be added or removed, and at the pods that use claims
// when they finish or go: a pod without a claim costs it nothing.
func NewProtectionController(s *store.Store, opts Options) *reconcile.Controller {
	p := &protector{store: s}
	return reconcile.NewController(ProtectionName, reconcile.ReconcilerFunc(p.reconcile), reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: []reconcile.Watch{
			{Kind: claimKind, Keys: protectionKeys(prefixClaim)},
			{Kind: volumeKind, Keys: protectionKeys(prefixVolume)},
			{Kind: podKind, Filter: store.Filter{Predicate: hasClaims}, Keys: releasedClaimKeys},
		},
	})
}

// protectionKeys names a claim or volume whose finalizer is to be added
// or removed; the others, most writes, concern nothing here.
func protectionKeys(prefix string) func(e store.Event) []string {
	return func(e store.Event) []string {
		obj := e.Object
		if e.Type == store.Deleted {
			return nil
		}
		has := slices.Contains(obj.GetFinalizers(), protectionFinalizer(obj))
		if has != (obj.GetDeletionTimestamp() == nil) {
			return []string{prefix + reconcile.ObjectKey(obj)}
		}
		return nil
	}
}

// hasClaims selects the pods that use a claim: the only pods the
// controller watches.
func hasClaims(o api.Object) bool {
	for _, v := range o.(*api.Pod).Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return true
		}
	}
	return false
}

// releasedClaimKeys names the claims of a pod that stopped using them:
// deleted, or finished. A claim being deleted may then go.
func releasedClaimKeys(e store.Event) []string {
	pod := e.Object.(*api.Pod)
	if e.Type != store.Deleted && !pod.Finished() {
		return nil
	}
	if e.Type == store.Modified && e.Old.(*api.Pod).Finished() {
		return nil // finished before: its claims were looked at then
	}
	return claimKeysOf(pod)
}

func (p *protector) reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	var err error
	if rest, ok := strings.CutPrefix(key, prefixClaim); ok {
		ns, name := reconcile.SplitKey(rest)
		err = p.syncClaim(ctx, ns, name)
	} else if rest, ok := strings.CutPrefix(key, prefixVolume); ok {
		err = p.syncVolume(ctx, rest)
	} else {
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("unknown key %q", key))
	}
	if store.IsConflict(err) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return reconcile.Result{}, err
}

// syncClaim adds or removes a claim's finalizer. Whether a pod still uses
// the claim is decided again inside the transaction that removes it, so
// that a pod bound to a node just before cannot lose its claim.
func (p *protector) syncClaim(ctx context.Context, ns, name string) error {
	obj, err := p.store.Get(claimKind, ns, name)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get claim %s/%s: %w", ns, name, err)
	}
	claim := obj.(*api.PersistentVolumeClaim)
	has := slices.Contains(claim.Finalizers, api.FinalizerPVCProtection)
	switch {
	case claim.DeletionTimestamp == nil && !has:
		return p.setFinalizer(ctx, claim, true)
	case claim.DeletionTimestamp == nil || !has:
		return nil
	}
	if used, err := claimUsed(p.store.Snapshot(), claim); err != nil || used {
		return err
	}
	_, err = p.store.Txn(ctx, func(tx *store.Txn) error {
		if used, err := claimUsed(tx, claim); err != nil || used {
			return err
		}
		c := claim.DeepCopy()
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == api.FinalizerPVCProtection })
		_, err := tx.Update(c)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove finalizer %s from claim %s/%s: %w", api.FinalizerPVCProtection, ns, name, err)
	}
	return nil
}

// claimUsed reports whether a pod bound to a node, and not finished, uses
// claim. A pod not bound yet does not count, as in Kubernetes: the
// scheduler does not place a pod whose claim is being deleted, and a pod
// left waiting for it must not keep the claim for ever.
func claimUsed(r reader, claim *api.PersistentVolumeClaim) (bool, error) {
	used := false
	err := r.Each(podKind, store.Filter{Namespace: claim.Namespace}, func(o api.Object) bool {
		pod := o.(*api.Pod)
		used = pod.Spec.NodeName != "" && !pod.Finished() && usesClaim(pod, claim.Name)
		return !used
	})
	if err != nil {
		return false, fmt.Errorf("list pods using claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return used, nil
}

// reader is what claimUsed reads from: a snapshot, or the transaction
// that removes the finalizer.
type reader interface {
	Each(k *api.Kind, f store.Filter, fn func(api.Object) bool) error
}

// syncVolume adds or removes a volume's finalizer. A volume being deleted
// keeps it while it is Bound; the volume controller releases it once its
// claim is gone, and when its reclaim policy is Delete it hands the volume
// to its node's agent, behind the local-path finalizer, in the same write.
func (p *protector) syncVolume(ctx context.Context, name string) error {
	obj, err := p.store.Get(volumeKind, "", name)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get volume %s: %w", name, err)
	}
	pv := obj.(*api.PersistentVolume)
	has := slices.Contains(pv.Finalizers, api.FinalizerPVProtection)
	switch {
	case pv.DeletionTimestamp == nil && !has:
		return p.setFinalizer(ctx, pv, true)
	case pv.DeletionTimestamp != nil && has && pv.Status.Phase != api.VolumeBound:
		return p.setFinalizer(ctx, pv, false)
	}
	return nil
}

// setFinalizer adds or removes obj's protection finalizer, writing over
// the version read.
func (p *protector) setFinalizer(ctx context.Context, obj api.Object, add bool) error {
	f := protectionFinalizer(obj)
	o := obj.DeepCopyObject().(api.Object)
	verb := "add"
	if add {
		o.SetFinalizers(append(o.GetFinalizers(), f))
	} else {
		verb = "remove"
		o.SetFinalizers(slices.DeleteFunc(o.GetFinalizers(), func(s string) bool { return s == f }))
	}
	if _, err := p.store.Update(ctx, o); err != nil {
		return fmt.Errorf("%s finalizer %s of %s: %w", verb, f, reconcile.ObjectKey(obj), err)
	}
	return nil
}

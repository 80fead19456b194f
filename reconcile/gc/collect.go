package gc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Reconcile looks at one object as an owner being deleted (orphan or
// foreground propagation) and as a dependent (dangling ownerReferences).
func (c *Collector) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	k, ns, name, err := c.splitKey(key)
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	obj, err := c.store.Get(k, ns, name)
	if store.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("gc: get %s %s: %w", k.Resource, reconcile.Key(ns, name), err)
	}
	if obj.GetDeletionTimestamp() != nil {
		fs := obj.GetFinalizers()
		switch {
		case slices.Contains(fs, FinalizerOrphan):
			// The finalizer's removal is a write: the next look starts
			// from it.
			return reconcile.Result{}, c.orphan(ctx, k, obj)
		case slices.Contains(fs, FinalizerForeground):
			return reconcile.Result{}, c.foreground(ctx, k, obj)
		}
	}
	return reconcile.Result{}, c.dangling(ctx, k, obj)
}

// orphan removes the owner's references from its dependents, then its
// orphan finalizer.
func (c *Collector) orphan(ctx context.Context, k *api.Kind, owner api.Object) error {
	uid := owner.GetUID()
	var errs []error
	err := c.eachDependent(storeReader{c.store}, k, owner, func(dk *api.Kind, d api.Object) error {
		if err := c.dropReferences(ctx, dk, d, []types.UID{uid}); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	if err := errors.Join(err, errors.Join(errs...)); err != nil {
		return err
	}
	return c.removeFinalizer(ctx, k, owner, FinalizerOrphan)
}

// foreground deletes the owner's dependents, in the foreground too, and
// removes its foreground finalizer once none that blocks the owner's
// deletion is left. As in Kubernetes, the policy propagates: a dependent
// gets the finalizer, so that it stays until its own blocking dependents
// are gone, and the owner with it (a Deployment until its ReplicaSets'
// pods have stopped).
func (c *Collector) foreground(ctx context.Context, k *api.Kind, owner api.Object) error {
	uid := owner.GetUID()
	blocked := false
	var errs []error
	err := c.eachDependent(storeReader{c.store}, k, owner, func(dk *api.Kind, d api.Object) error {
		for _, ref := range d.GetOwnerReferences() {
			if ref.UID == uid && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				blocked = true
			}
		}
		if d.GetDeletionTimestamp() != nil {
			return nil
		}
		if err := c.deleteForeground(ctx, dk, d); err != nil {
			errs = append(errs, fmt.Errorf("gc: delete %s %s/%s owned by %s: %w", dk.Resource, d.GetNamespace(), d.GetName(), uid, err))
		}
		return nil
	})
	if err := errors.Join(err, errors.Join(errs...)); err != nil {
		return err
	}
	if blocked {
		// The dependents' deletion events bring the owner back.
		return nil
	}
	return c.removeFinalizer(ctx, k, owner, FinalizerForeground)
}

// deleteForeground deletes an object as the API server does with
// propagationPolicy Foreground: the foreground finalizer, then the
// deletion, in one transaction.
func (c *Collector) deleteForeground(ctx context.Context, k *api.Kind, obj api.Object) error {
	_, err := c.store.Txn(ctx, func(tx *store.Txn) error {
		cur, err := tx.Get(k, obj.GetNamespace(), obj.GetName())
		if err != nil || cur.GetUID() != obj.GetUID() || cur.GetDeletionTimestamp() != nil {
			return err
		}
		if !slices.Contains(cur.GetFinalizers(), FinalizerForeground) {
			marked := cur.DeepCopyObject().(api.Object)
			marked.SetFinalizers(append(slices.Clone(cur.GetFinalizers()), FinalizerForeground))
			if _, err := tx.Update(marked); err != nil {
				return err
			}
		}
		_, err = tx.Delete(k, obj.GetNamespace(), obj.GetName(), store.DeleteOptions{})
		return err
	})
	if store.IsNotFound(err) {
		return nil
	}
	return err
}

// dangling deletes a dependent whose owners are all gone (background
// propagation) and drops the references to owners that are gone from one
// that still has an owner.
func (c *Collector) dangling(ctx context.Context, k *api.Kind, obj api.Object) error {
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	var gone []types.UID
	for _, ref := range refs {
		absent, err := c.ownerAbsent(ref, obj)
		if err != nil {
			return err
		}
		if absent {
			gone = append(gone, ref.UID)
		}
	}
	switch {
	case len(gone) == 0:
		return nil
	case len(gone) < len(refs):
		return c.dropReferences(ctx, k, obj, gone)
	case obj.GetDeletionTimestamp() != nil:
		return nil
	}
	_, err := c.store.Delete(ctx, k, obj.GetNamespace(), obj.GetName(),
		store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(obj.GetUID())}})
	if err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("gc: delete %s %s/%s, its owners gone: %w", k.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// ownerAbsent reports whether the owner a reference names is gone: not
// stored, or stored under another UID. A reference of an unknown kind is
// left alone.
func (c *Collector) ownerAbsent(ref metav1.OwnerReference, obj api.Object) (bool, error) {
	k, ok := c.ownerKind(ref)
	if !ok {
		return false, nil
	}
	if k.Namespaced && obj.GetNamespace() == "" {
		// A cluster-scoped object cannot be owned by a namespaced one.
		return true, nil
	}
	owner, err := c.store.Get(k, ownerNamespace(k, obj), ref.Name)
	if store.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("gc: get owner %s %s: %w", k.Resource, ref.Name, err)
	}
	return owner.GetUID() != ref.UID, nil
}

// dropReferences removes the references to uids from an object.
func (c *Collector) dropReferences(ctx context.Context, k *api.Kind, obj api.Object, uids []types.UID) error {
	_, err := c.store.Txn(ctx, func(tx *store.Txn) error {
		cur, err := tx.Get(k, obj.GetNamespace(), obj.GetName())
		if err != nil || cur.GetUID() != obj.GetUID() {
			return err
		}
		refs := slices.DeleteFunc(slices.Clone(cur.GetOwnerReferences()), func(r metav1.OwnerReference) bool {
			return slices.Contains(uids, r.UID)
		})
		if len(refs) == len(cur.GetOwnerReferences()) {
			return nil
		}
		up := cur.DeepCopyObject().(api.Object)
		up.SetOwnerReferences(refs)
		_, err = tx.Update(up)
		return err
	})
	if err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("gc: drop owner references of %s %s/%s: %w", k.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// removeFinalizer takes a propagation finalizer off an owner; the store
// deletes it if it was the last.
func (c *Collector) removeFinalizer(ctx context.Context, k *api.Kind, obj api.Object, finalizer string) error {
	_, err := c.store.Txn(ctx, func(tx *store.Txn) error {
		cur, err := tx.Get(k, obj.GetNamespace(), obj.GetName())
		if err != nil || cur.GetUID() != obj.GetUID() {
			return err
		}
		fs := slices.DeleteFunc(slices.Clone(cur.GetFinalizers()), func(f string) bool { return f == finalizer })
		up := cur.DeepCopyObject().(api.Object)
		up.SetFinalizers(fs)
		_, err = tx.Update(up)
		return err
	})
	if err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("gc: remove finalizer %s from %s %s/%s: %w", finalizer, k.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

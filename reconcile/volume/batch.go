package volume

import (
	"context"
	"fmt"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// bindBatch bounds how many bindings share one store transaction.
const bindBatch = 256

// pair is a binding chosen by syncClass, with the versions it was chosen
// from.
type pair struct {
	pv    *api.PersistentVolume
	claim *api.PersistentVolumeClaim
}

// syncClass binds the pending claims of a class that bind at once, after
// volumes of the class became available or such claims appeared: each
// claim is matched through the index as syncClaim would, and the bindings
// are written many to a transaction, since a transaction's fixed cost is
// most of a binding's. Claims it cannot settle so (pre-bound volumes,
// named volumes, classes that wait or provision, no match) get their own
// sync, which also records why they wait.
func (r *Reconciler) syncClass(ctx context.Context, name string) error {
	snap := r.store.Snapshot()
	batchable := true
	if name != "" {
		o, err := snap.Get(classKind, "", name)
		if err != nil && !store.IsNotFound(err) {
			return fmt.Errorf("get storageclass %s: %w", name, err)
		}
		// A claim of a class that does not exist waits like one without a
		// class; the others bind now only if the class says Immediate.
		batchable = err != nil || bindingMode(o.(*api.StorageClass)) == api.VolumeBindingImmediate
	}
	var pairs []pair
	var alone []string
	err := snap.Each(claimKind, store.Filter{Predicate: func(o api.Object) bool {
		c := o.(*api.PersistentVolumeClaim)
		return c.Spec.VolumeName == "" && claimClass(c) == name && c.DeletionTimestamp == nil
	}}, func(o api.Object) bool {
		c := o.(*api.PersistentVolumeClaim)
		key := prefixClaim + reconcile.ObjectKey(c)
		if !batchable {
			alone = append(alone, key)
			return true
		}
		pre, err := snap.List(volumeKind, store.Filter{Index: store.IndexClaim, Value: reconcile.ObjectKey(c)})
		if err != nil || len(pre) > 0 {
			alone = append(alone, key)
			return true
		}
		req, err := NewRequest(c, nil)
		if err != nil {
			alone = append(alone, key)
			return true
		}
		pv, err := r.take(req)
		if err != nil || pv == nil {
			alone = append(alone, key)
			return true
		}
		pairs = append(pairs, pair{pv: pv, claim: c})
		return true
	})
	if err != nil {
		// Give back what was taken: the claims' own syncs take over.
		for _, p := range pairs {
			r.giveBack(p)
		}
		return fmt.Errorf("list claims of class %q: %w", name, err)
	}
	bound := 0
	for len(pairs) > 0 {
		n := min(len(pairs), bindBatch)
		ok, err := r.bindAll(ctx, pairs[:n])
		bound += ok
		if err != nil {
			for _, p := range pairs {
				r.giveBack(p)
			}
			return err
		}
		pairs = pairs[n:]
	}
	for _, key := range alone {
		r.enqueue(key)
	}
	if bound > 0 {
		r.changed()
	}
	return nil
}

// bindAll writes the bindings of pairs in one transaction, each only if
// neither object changed since it was chosen; the others are given back
// to the index and to their claims' own syncs. It returns how many it
// bound.
func (r *Reconciler) bindAll(ctx context.Context, pairs []pair) (int, error) {
	now := r.clock.Now()
	written := make([]bool, len(pairs))
	bound := 0
	_, err := r.store.Txn(ctx, func(tx *store.Txn) error {
		bound = 0
		for i, p := range pairs {
			written[i] = false
			pv, err := tx.Get(volumeKind, "", p.pv.Name)
			if err != nil || pv.GetResourceVersion() != p.pv.ResourceVersion {
				continue
			}
			c, err := tx.Get(claimKind, p.claim.Namespace, p.claim.Name)
			if err != nil || c.GetResourceVersion() != p.claim.ResourceVersion {
				continue
			}
			v, cl := bindings(p.pv, p.claim, now)
			if _, err := tx.Update(v); err != nil {
				return fmt.Errorf("bind volume %s to claim %s/%s: %w", v.Name, cl.Namespace, cl.Name, err)
			}
			if _, err := tx.Update(cl); err != nil {
				return fmt.Errorf("bind claim %s/%s to volume %s: %w", cl.Namespace, cl.Name, v.Name, err)
			}
			written[i] = true
			bound++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for i, p := range pairs {
		if !written[i] {
			r.giveBack(p)
		}
	}
	return bound, nil
}

// giveBack returns a binding's volume to the index and its claim to its
// own sync.
func (r *Reconciler) giveBack(p pair) {
	r.restore(p.pv.Name)
	r.enqueue(prefixClaim + reconcile.ObjectKey(p.claim))
}

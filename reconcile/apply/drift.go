package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Correct reverts a change made outside a source to one object the
// source applied: the object is brought back to what the source's last
// applied revision declares (recreated if it was deleted), and a
// DriftCorrected event says so. It does nothing for an object the source
// did not apply, one being deleted (it is recreated once gone), or one in
// a namespace that is missing or going. It reports whether it wrote.
func (a *Applier) Correct(ctx context.Context, name string, key Key) (bool, error) {
	a.mu.Lock()
	st := a.sources[name]
	a.mu.Unlock()
	if st == nil {
		return false, nil // a source that applied nothing since the start
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	decoded := st.applied[key]
	if decoded == nil {
		return false, nil
	}
	corrected := false
	var message string
	rev, err := a.store.Txn(ctx, func(tx *store.Txn) error {
		live, err := tx.Get(key.Kind, key.Namespace, key.Name)
		switch {
		case store.IsNotFound(err):
			if ok, err := namespaceUsable(tx, key); !ok || err != nil {
				return err
			}
			stored, err := tx.Create(prepared(name, decoded))
			if err != nil {
				return err
			}
			corrected = true
			message = fmt.Sprintf("Source %s recreated %s, which was deleted outside it", name, key)
			return a.recordEvent(tx, stored, ReasonDriftCorrected, message)
		case err != nil:
			return err
		case live.GetDeletionTimestamp() != nil, live.GetResourceVersion() == st.seen[key]:
			// Going, or as the source last wrote or checked it.
			return nil
		}
		want := prepared(name, decoded)
		merged := merge(want, live, want)
		if equal(merged, live) {
			// A change the source does not own (status, a controller's
			// annotation): remember the version as checked.
			st.seen[key] = live.GetResourceVersion()
			return nil
		}
		if errs := api.ValidateUpdate(live, merged); len(errs) > 0 {
			a.log.Warn("cannot revert a change made outside the source", "source", name, "object", key.String(), "err", errs.ToAggregate())
			return nil
		}
		fields := changedFields(live, merged)
		stored, err := tx.Update(merged)
		if err != nil {
			return err
		}
		corrected = true
		message = driftMessage(name, key, fields)
		return a.recordEvent(tx, stored, ReasonDriftCorrected, message)
	})
	if err != nil {
		return false, fmt.Errorf("correct drift of %s (source %s): %w", key, name, err)
	}
	if corrected {
		st.seen[key] = fmt.Sprint(rev)
		a.log.Info("reverted a change made outside the source", "source", name, "object", key.String())
		if a.onDrift != nil {
			a.onDrift(name, key, message)
		}
	}
	return corrected, nil
}

// namespaceUsable reports whether an object's namespace exists and is not
// going, so that a deleted object can be put back.
func namespaceUsable(tx *store.Txn, key Key) (bool, error) {
	if !key.Kind.Namespaced {
		return true, nil
	}
	obj, err := tx.Get(namespaceKind, "", key.Namespace)
	switch {
	case store.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	ns := obj.(*api.Namespace)
	return !ns.Terminating(), nil
}

// keysIn lists the applied objects of a source in one namespace: what to
// look at again once a namespace deleted outside the source is back.
func (a *Applier) keysIn(name, namespace string) []Key {
	st := a.state(name)
	st.mu.Lock()
	defer st.mu.Unlock()
	var keys []Key
	for k := range st.applied {
		if k.Namespace == namespace {
			keys = append(keys, k)
		}
	}
	return keys
}

// DriftController returns a controller that watches, in the store, every
// object a source applied (those whose berth.dev/source annotation names
// a source, whichever: Sources come and go while it runs) and corrects
// each one that changes. opts' Store and Watches are set here.
func (a *Applier) DriftController(opts reconcile.Options) *reconcile.Controller {
	opts.Store = a.store
	opts.Watches = nil
	owned := func(o api.Object) bool {
		name := o.GetAnnotations()[api.AnnotationSource]
		return name != "" && name != string(api.SourceTypeAPI)
	}
	for _, k := range api.Kinds() {
		if k == eventKind {
			continue
		}
		opts.Watches = append(opts.Watches, reconcile.Watch{
			Kind:   k,
			Filter: store.Filter{Predicate: owned},
			Keys: func(e store.Event) []string {
				return []string{driftKey(e.Object.GetAnnotations()[api.AnnotationSource], KeyOf(e.Object))}
			},
		})
	}
	var c *reconcile.Controller
	c = reconcile.NewController("drift", reconcile.ReconcilerFunc(func(ctx context.Context, qkey string) (reconcile.Result, error) {
		name, key, ok := parseDriftKey(qkey)
		if !ok {
			return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("bad key %q", qkey))
		}
		corrected, err := a.Correct(ctx, name, key)
		if err != nil {
			return reconcile.Result{}, err
		}
		if corrected && key.Kind == namespaceKind {
			for _, k := range a.keysIn(name, key.Name) {
				c.Enqueue(driftKey(name, k))
			}
		}
		return reconcile.Result{}, nil
	}), opts)
	return c
}

// driftKey is a work-queue key: "source/Kind/namespace/name".
func driftKey(name string, k Key) string {
	return name + "/" + kindName(k.Kind) + "/" + k.Namespace + "/" + k.Name
}

func parseDriftKey(s string) (string, Key, bool) {
	parts := strings.SplitN(s, "/", 4)
	if len(parts) != 4 {
		return "", Key{}, false
	}
	k, ok := api.KindNamed(parts[1])
	if !ok {
		return "", Key{}, false
	}
	return parts[0], Key{Kind: k, Namespace: parts[2], Name: parts[3]}, true
}

// Declared is what the revision a source last applied declares for one
// object, as a drift correction would write it over live (or, live nil,
// recreate it), and that revision. ok is false for an object the source
// did not apply since this process started: the applier keeps what a
// source applied in memory only.
func (a *Applier) Declared(name string, key Key, live api.Object) (_ api.Object, revision string, ok bool) {
	a.mu.Lock()
	st := a.sources[name]
	a.mu.Unlock()
	if st == nil {
		return nil, "", false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	decoded := st.applied[key]
	if decoded == nil {
		return nil, "", false
	}
	want := prepared(name, decoded)
	if live == nil {
		return want, st.revision, true
	}
	return merge(want, live, want), st.revision, true
}

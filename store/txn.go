package store

import (
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/berth-dev/berth/api"
)

// Txn is a write transaction. Its reads see its own writes. Every write
// gets the transaction's revision as resourceVersion.
type Txn struct {
	reader
	store  *Store
	now    *metav1.Time
	ops    []Op
	events []Event
}

// Preconditions must hold for a delete to proceed.
type Preconditions struct {
	UID             string
	ResourceVersion string
}

// DeleteOptions tune a delete.
type DeleteOptions struct {
	// GracePeriodSeconds overrides the object's grace period; 0 deletes at
	// once unless finalizers hold the object.
	GracePeriodSeconds *int64
	Preconditions      *Preconditions
}

func (tx *Txn) timestamp() metav1.Time {
	if tx.now == nil {
		t := metav1.NewTime(tx.store.clock.Now().Truncate(time.Second))
		tx.now = &t
	}
	return *tx.now
}

func (tx *Txn) resourceVersion() string { return fmt.Sprint(tx.rev) }

func (tx *Txn) kindOf(obj api.Object) (*api.Kind, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return tx.customKindOf(u)
	}
	k := api.KindOf(obj)
	if k == nil {
		return nil, fmt.Errorf("%w: %T is not a registered kind", ErrInvalid, obj)
	}
	return k, nil
}

func checkScope(k *api.Kind, obj api.Object) error {
	switch {
	case obj.GetName() == "":
		return objectError(ErrInvalid, k, obj.GetNamespace(), "", "metadata.name is required")
	case k.Namespaced && obj.GetNamespace() == "":
		return objectError(ErrInvalid, k, "", obj.GetName(), "metadata.namespace is required")
	case !k.Namespaced && obj.GetNamespace() != "":
		return objectError(ErrInvalid, k, obj.GetNamespace(), obj.GetName(), "the kind is not namespaced")
	}
	return nil
}

// generateNameAttempts is how many names Create draws for an object with
// generateName before it reports the last one taken.
const generateNameAttempts = 8

// Create stores a new object. It assigns uid (unless set), name from
// generateName, creationTimestamp, resourceVersion and generation 1.
func (tx *Txn) Create(obj api.Object) (api.Object, error) {
	k, err := tx.kindOf(obj)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	generated := obj.GetName() == "" && obj.GetGenerateName() != ""
	if generated {
		obj.SetName(obj.GetGenerateName() + rand.String(5))
	}
	if err := checkScope(k, obj); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if _, err := tx.Get(k, obj.GetNamespace(), obj.GetName()); err != nil {
			break
		}
		// Five random characters collide once in a few thousand names
		// among 10,000 pods of one owner: a generated name is drawn again,
		// as Kubernetes' API server does, a few times.
		if !generated || attempt >= generateNameAttempts {
			return nil, objectError(ErrAlreadyExists, k, obj.GetNamespace(), obj.GetName(), "")
		}
		obj.SetName(obj.GetGenerateName() + rand.String(5))
	}
	if obj.GetUID() == "" {
		obj.SetUID(uuid.NewUUID())
	}
	obj.SetCreationTimestamp(tx.timestamp())
	obj.SetDeletionTimestamp(nil)
	obj.SetDeletionGracePeriodSeconds(nil)
	obj.SetResourceVersion(tx.resourceVersion())
	obj.SetGeneration(0)
	if k.Generation {
		obj.SetGeneration(1)
	}
	if crd, ok := obj.(*api.CustomResourceDefinition); ok {
		if err := tx.crdWritten(crd); err != nil {
			return nil, err
		}
	}
	if err := tx.admit(k, obj, nil); err != nil {
		return nil, err
	}
	if err := tx.insert(k, obj); err != nil {
		return nil, err
	}
	tx.record(k, Added, obj, nil)
	return obj, nil
}

// Update replaces an object. A non-empty resourceVersion or uid must match
// the stored one (ErrConflict otherwise). uid, creation and deletion stamps
// are kept from the stored object; generation grows when the spec changes,
// for the kinds that count it (api.Kind.Generation).
// An update that changes nothing writes nothing and returns the stored
// object. An update that removes the last finalizer of an object being
// deleted deletes it, unless it is a pod in its grace period: that one
// goes when deleted again with grace 0.
func (tx *Txn) Update(obj api.Object) (api.Object, error) {
	k, err := tx.kindOf(obj)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	if err := checkScope(k, obj); err != nil {
		return nil, err
	}
	old, err := tx.Get(k, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return nil, err
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != old.GetResourceVersion() {
		return nil, &ObjectError{Err: ErrConflict, Kind: k, Namespace: obj.GetNamespace(), Name: obj.GetName(), Current: old,
			Detail: fmt.Sprintf("the object has been modified (resourceVersion %s, stored %s); read it again and retry", rv, old.GetResourceVersion())}
	}
	if uid := obj.GetUID(); uid != "" && uid != old.GetUID() {
		return nil, objectError(ErrConflict, k, obj.GetNamespace(), obj.GetName(),
			fmt.Sprintf("uid %s does not match the stored %s", uid, old.GetUID()))
	}
	obj.SetUID(old.GetUID())
	obj.SetCreationTimestamp(old.GetCreationTimestamp())
	obj.SetDeletionTimestamp(old.GetDeletionTimestamp())
	obj.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	obj.SetGeneration(old.GetGeneration())
	obj.SetResourceVersion(old.GetResourceVersion())
	if crd, ok := obj.(*api.CustomResourceDefinition); ok {
		if err := tx.crdWritten(crd); err != nil {
			return nil, err
		}
	}
	specChanged, changed := compare(k, old, obj)
	if !changed {
		return old, nil
	}
	if old.GetDeletionTimestamp() != nil && !finalizing(obj) && !graceful(old) {
		return tx.remove(k, old)
	}
	if specChanged && k.Generation {
		obj.SetGeneration(old.GetGeneration() + 1)
	}
	obj.SetResourceVersion(tx.resourceVersion())
	if err := tx.admit(k, obj, old); err != nil {
		return nil, err
	}
	if err := tx.insert(k, obj); err != nil {
		return nil, err
	}
	tx.record(k, Modified, obj, old)
	return obj, nil
}

// Delete deletes an object. One with finalizers, or a pod running on a
// node with a grace period, is only marked: deletionTimestamp is set (to
// now plus the grace period) and the object stays until its finalizers
// are gone or it is deleted again with grace 0. Delete returns the object
// as it last stood.
func (tx *Txn) Delete(k *api.Kind, namespace, name string, opts DeleteOptions) (api.Object, error) {
	cur, ok := tx.current(k)
	if !ok {
		return nil, objectError(ErrNotFound, k, namespace, name, "")
	}
	k = cur
	old, err := tx.Get(k, namespace, name)
	if err != nil {
		return nil, err
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != "" && p.UID != string(old.GetUID()) {
			return nil, objectError(ErrConflict, k, namespace, name,
				fmt.Sprintf("precondition failed: uid %s, stored %s", p.UID, old.GetUID()))
		}
		if p.ResourceVersion != "" && p.ResourceVersion != old.GetResourceVersion() {
			return nil, objectError(ErrConflict, k, namespace, name,
				fmt.Sprintf("precondition failed: resourceVersion %s, stored %s", p.ResourceVersion, old.GetResourceVersion()))
		}
	}
	grace := gracePeriod(old, opts.GracePeriodSeconds)
	if grace == 0 && !finalizing(old) {
		return tx.remove(k, old)
	}
	deadline := metav1.NewTime(tx.timestamp().Add(time.Duration(grace) * time.Second))
	if dt := old.GetDeletionTimestamp(); dt != nil && !deadline.Before(dt) {
		if cur := old.GetDeletionGracePeriodSeconds(); cur == nil || *cur <= grace {
			// Already terminating, at least as soon: nothing to shorten.
			return old, nil
		}
		// Past its deadline, but a shorter grace is recorded: a pod
		// its agent is done with goes when its finalizers do.
		deadline = *dt
	}
	obj := old.DeepCopyObject().(api.Object)
	obj.SetDeletionTimestamp(&deadline)
	obj.SetDeletionGracePeriodSeconds(&grace)
	if old.GetDeletionTimestamp() == nil && old.GetGeneration() > 0 {
		// As Kubernetes marks a deletion in a generation it counts.
		obj.SetGeneration(old.GetGeneration() + 1)
	}
	if ns, ok := obj.(*api.Namespace); ok {
		ns.Status.Phase = api.NamespaceTerminating
	}
	obj.SetResourceVersion(tx.resourceVersion())
	if err := tx.admit(k, obj, old); err != nil {
		return nil, err
	}
	if err := tx.insert(k, obj); err != nil {
		return nil, err
	}
	tx.record(k, Modified, obj, old)
	return obj, nil
}

// finalizing reports whether something must finish before the object may
// go: its finalizers, and for a namespace also spec.finalizers, which hold it
// (Terminating) until the namespace controller has emptied it, as in
// Kubernetes.
func finalizing(obj api.Object) bool {
	if len(obj.GetFinalizers()) > 0 {
		return true
	}
	ns, ok := obj.(*api.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}

// graceful reports whether an object being deleted waits for more than
// its finalizers: a pod in its grace period, which goes when its agent
// deletes it again with grace 0, as Kubernetes' ShouldDeleteDuringUpdate.
func graceful(obj api.Object) bool {
	g := obj.GetDeletionGracePeriodSeconds()
	return g != nil && *g > 0
}

// gracePeriod is how long an object may take to go. Only pods running on
// a node have one: an unbound or finished pod has nothing to stop.
func gracePeriod(obj api.Object, requested *int64) int64 {
	pod, ok := obj.(*api.Pod)
	if !ok || pod.Spec.NodeName == "" || pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed {
		return 0
	}
	if requested != nil {
		return max(*requested, 0)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return max(*pod.Spec.TerminationGracePeriodSeconds, 0)
	}
	return 30
}

func (tx *Txn) remove(k *api.Kind, old api.Object) (api.Object, error) {
	if err := tx.admit(k, nil, old); err != nil {
		return nil, err
	}
	if crd, ok := old.(*api.CustomResourceDefinition); ok {
		if err := tx.crdRemoved(crd); err != nil {
			return nil, err
		}
	}
	if err := tx.txn.Delete(tableName(k), old); err != nil {
		return nil, fmt.Errorf("delete %s %s/%s: %w", k.Resource, old.GetNamespace(), old.GetName(), err)
	}
	tx.ops = append(tx.ops, Op{Kind: k, Namespace: old.GetNamespace(), Name: old.GetName(), Revision: tx.rev})
	// The event carries the last state at the revision of its deletion.
	gone := old.DeepCopyObject().(api.Object)
	gone.SetResourceVersion(tx.resourceVersion())
	tx.events = append(tx.events, Event{Type: Deleted, Revision: tx.rev, Kind: k, Object: gone, Old: old})
	return gone, nil
}

func (tx *Txn) insert(k *api.Kind, obj api.Object) error {
	if err := tx.txn.Insert(tableName(k), obj); err != nil {
		return fmt.Errorf("write %s %s/%s: %w", k.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
	tx.ops = append(tx.ops, Op{Kind: k, Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: obj, Revision: tx.rev})
	return nil
}

func (tx *Txn) record(k *api.Kind, t EventType, obj, old api.Object) {
	tx.events = append(tx.events, Event{Type: t, Revision: tx.rev, Kind: k, Object: obj, Old: old})
}

// compare tells whether an update changes an object's spec, and whether it
// changes anything at all. Status, then spec, then the rest is compared,
// so each part is walked at most once and the common status-only update
// stops at the first part.
func compare(k *api.Kind, old, obj api.Object) (specChanged, changed bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return compareCustom(k, old.(*unstructured.Unstructured), u)
	}
	ov, nv := reflect.ValueOf(old).Elem(), reflect.ValueOf(obj).Elem()
	t := ov.Type()
	var seen [2]int
	n := 0
	for _, name := range [...]string{"Status", "Spec"} {
		f, ok := t.FieldByName(name)
		if !ok {
			continue
		}
		seen[n] = f.Index[0]
		n++
		if !semanticEqual(ov.Field(f.Index[0]), nv.Field(f.Index[0])) {
			return name == "Spec" || specDiffers(ov, nv), true
		}
	}
	for i := range t.NumField() {
		if n > 0 && i == seen[0] || n > 1 && i == seen[1] {
			continue
		}
		if !semanticEqual(ov.Field(i), nv.Field(i)) {
			return false, true
		}
	}
	return false, false
}

func specDiffers(ov, nv reflect.Value) bool {
	f, ok := ov.Type().FieldByName("Spec")
	if !ok {
		return false
	}
	return !semanticEqual(ov.Field(f.Index[0]), nv.Field(f.Index[0]))
}

// semanticEqual is Kubernetes' semantic equality (quantities by value,
// times by instant), tried after the standard library's cheaper identical
// test: values copied from one another, the common case, are identical.
// Fields are compared through their addresses: Interface on a struct
// field boxes a copy of it, a pod's whole spec for every update.
func semanticEqual(a, b reflect.Value) bool {
	if a.CanAddr() && b.CanAddr() {
		a, b = a.Addr(), b.Addr()
	}
	x, y := a.Interface(), b.Interface()
	return reflect.DeepEqual(x, y) || equality.Semantic.DeepEqual(x, y)
}

// compareCustom is compare for a custom resource. Its generation counts
// the changes to anything but its metadata and, when it has a status
// subresource, its status: as Kubernetes counts them.
func compareCustom(k *api.Kind, old, obj *unstructured.Unstructured) (specChanged, changed bool) {
	for key, v := range obj.Object {
		ov, ok := old.Object[key]
		if ok && equality.Semantic.DeepEqual(ov, v) {
			continue
		}
		changed = true
		if key != "metadata" && (key != "status" || !k.HasStatus) {
			specChanged = true
		}
	}
	for key := range old.Object {
		if _, ok := obj.Object[key]; !ok {
			changed = true
			if key != "metadata" && (key != "status" || !k.HasStatus) {
				specChanged = true
			}
		}
	}
	return specChanged, changed
}

package strategy

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berth-dev/berth/api"
)

// Strategy is a kind's rules for what a write may set, as the strategies
// of kube-apiserver's registry: what a create may not choose, and what a
// write to the object (not to its status) keeps of the stored version.
// The API server applies them to every create and update, and the
// applier to the objects a source writes, so the two agree on who owns
// which field.
type Strategy interface {
	// PrepareForCreate clears what a client may not choose: the server's
	// metadata and, for a kind with a status subresource, the status.
	PrepareForCreate(obj api.Object)
	// PrepareForUpdate gives obj, the next version of old written to the
	// object itself, what only other writers set: the status, which the
	// status subresource writes.
	PrepareForUpdate(obj, old api.Object)
}

// For returns the strategy of a kind: its own where it has one, else the
// one every kind follows.
func For(k *api.Kind) Strategy {
	if s, ok := strategies[k]; ok {
		return s
	}
	return generic{k}
}

// strategies are the kinds whose rules differ from generic's.
var strategies = map[*api.Kind]Strategy{
	api.KindOf(&api.Node{}):      node{generic{api.KindOf(&api.Node{})}},
	api.KindOf(&api.Pod{}):       pod{generic{api.KindOf(&api.Pod{})}},
	api.KindOf(&api.Namespace{}): namespace{generic{api.KindOf(&api.Namespace{})}},
}

// generic is the strategy of every kind: the server owns the metadata it
// sets, and the status subresource owns the status.
type generic struct{ kind *api.Kind }

func (s generic) PrepareForCreate(obj api.Object) {
	resetMeta(s.kind, obj)
	if s.kind.HasStatus {
		ClearStatus(obj)
	}
}

func (s generic) PrepareForUpdate(obj, old api.Object) {
	if s.kind.HasStatus {
		CopyStatus(obj, old)
	}
}

// node: a Node is created with the status its agent registers, as in
// Kubernetes.
type node struct{ generic }

func (s node) PrepareForCreate(obj api.Object) { resetMeta(s.kind, obj) }

// pod: a pod starts Pending.
type pod struct{ generic }

func (s pod) PrepareForCreate(obj api.Object) {
	s.generic.PrepareForCreate(obj)
	obj.(*api.Pod).Status.Phase = api.PodPending
}

// namespace: spec.finalizers change only through the finalize
// subresource (the namespace controller, or an operator freeing a stuck
// namespace), as in Kubernetes.
type namespace struct{ generic }

func (s namespace) PrepareForUpdate(obj, old api.Object) {
	s.generic.PrepareForUpdate(obj, old)
	obj.(*api.Namespace).Spec.Finalizers = old.(*api.Namespace).Spec.Finalizers
}

// resetMeta drops the metadata the server sets on create, and the
// namespace of a cluster-scoped kind.
func resetMeta(k *api.Kind, obj api.Object) {
	obj.SetUID("")
	obj.SetResourceVersion("")
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetDeletionTimestamp(nil)
	obj.SetDeletionGracePeriodSeconds(nil)
	obj.SetGeneration(0)
	if !k.Namespaced {
		obj.SetNamespace("")
	}
}

// statusField returns the Status field of an object, or an invalid Value
// for kinds without one.
func statusField(obj api.Object) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName("Status")
}

// CopyStatus sets dst's status to src's, for built-in kinds and custom
// resources alike.
func CopyStatus(dst, src api.Object) {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		if st, ok := src.(*unstructured.Unstructured).Object["status"]; ok {
			du.Object["status"] = st
		} else {
			delete(du.Object, "status")
		}
		return
	}
	d, s := statusField(dst), statusField(src)
	if d.IsValid() && s.IsValid() && d.CanSet() {
		d.Set(s)
	}
}

// ClearStatus empties an object's status.
func ClearStatus(obj api.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, "status")
		return
	}
	if f := statusField(obj); f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
}

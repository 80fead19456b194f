package namespace

import (
	"fmt"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Admit refuses to create an object in a namespace that is being
// deleted, for every writer, as Kubernetes' NamespaceLifecycle admission
// does. It runs inside the write's transaction (a store.AdmitFunc), so a
// controller's creation is serialised with the namespace's marking:
// either it commits first and the namespace controller's pass, which
// lists after the marking, deletes it, or it is refused. A check before
// the transaction would leave a window in which a ReplicaSet's new pod
// lands after that pass and outlives its namespace. A namespace that does
// not exist is left to the API to refuse (404): the store's own writers
// create into namespaces they read.
//
// It also refuses to delete a system namespace (api.SystemNamespace,
// default), as Kubernetes does: `delete namespace default` would
// otherwise empty it of everything.
func Admit(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
	if k == namespaceKind && old != nil && api.SystemNamespace(old.GetName()) &&
		(obj == nil || obj.GetDeletionTimestamp() != nil && old.GetDeletionTimestamp() == nil) {
		return &store.ObjectError{Err: store.ErrForbidden, Kind: k, Name: old.GetName(), Detail: "this namespace may not be deleted"}
	}
	if old != nil || obj == nil || !k.Namespaced {
		return nil
	}
	o, err := tx.Get(namespaceKind, "", obj.GetNamespace())
	switch {
	case store.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("namespace lifecycle: get namespace %s: %w", obj.GetNamespace(), err)
	case !o.(*api.Namespace).Terminating():
		return nil
	}
	return &store.ObjectError{
		Err: store.ErrNamespaceTerminating, Kind: k, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Detail: fmt.Sprintf("unable to create new content in namespace %s because it is being terminated", obj.GetNamespace()),
	}
}

package volume

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// DefaultClassName is the StorageClass every control plane starts with.
const DefaultClassName = "local-path"

// DefaultClass is the default StorageClass made at bootstrap: local-path,
// annotated as the default, volumes on the consumer's node.
func DefaultClass() *api.StorageClass {
	wffc := api.VolumeBindingWaitForFirstConsumer
	sc := &api.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultClassName,
			Annotations: map[string]string{api.AnnotationDefaultStorageClass: "true"},
		},
		Provisioner:       api.LocalPathProvisioner,
		VolumeBindingMode: &wffc,
	}
	api.Default(sc)
	return sc
}

// AdmitDefaultClass is a store admission hook that gives a claim created
// without storageClassName the default StorageClass, as Kubernetes'
// DefaultStorageClass admission plugin does. It runs in the store, so
// claims from the API and from sources alike get it. A claim that sets
// storageClassName: "" asks for no class and keeps it. With several
// default classes the newest wins, as in Kubernetes.
func AdmitDefaultClass(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
	claim, ok := obj.(*api.PersistentVolumeClaim)
	if !ok || old != nil || claim.Spec.StorageClassName != nil {
		return nil
	}
	var best *api.StorageClass
	err := tx.Each(classKind, store.Filter{}, func(o api.Object) bool {
		sc := o.(*api.StorageClass)
		if sc.Annotations[api.AnnotationDefaultStorageClass] != "true" {
			return true
		}
		if best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name) {
			best = sc
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("default storage class: %w", err)
	}
	if best != nil {
		name := best.Name
		claim.Spec.StorageClassName = &name
	}
	return nil
}

// Kubernetes' words for a claim that may not grow.
const (
	msgResizeUnbound  = "Only bound persistent volume claims can be expanded"
	msgResizeNotAllow = "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
)

// AdmitResize is a store admission hook that refuses to grow a claim's
// storage request unless the claim is bound and its StorageClass sets
// allowVolumeExpansion, as Kubernetes' PersistentVolumeClaimResize
// admission plugin does, in its words. Shrinking is refused by
// validation (api.ValidateUpdate). It runs in the store, so a source
// cannot grow a claim the API would not.
func AdmitResize(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
	claim, ok := obj.(*api.PersistentVolumeClaim)
	if !ok || old == nil {
		return nil
	}
	was := old.(*api.PersistentVolumeClaim)
	size, before := claim.Spec.Resources.Requests[api.ResourceStorage], was.Spec.Resources.Requests[api.ResourceStorage]
	if size.Cmp(before) <= 0 {
		return nil
	}
	forbid := func(msg string) error {
		return &store.ObjectError{Err: store.ErrForbidden, Kind: k, Namespace: claim.Namespace, Name: claim.Name, Detail: msg}
	}
	if was.Status.Phase != api.ClaimBound {
		return forbid(msgResizeUnbound)
	}
	name := claimClass(claim)
	if name == "" || name != claimClass(was) {
		return forbid(msgResizeNotAllow)
	}
	o, err := tx.Get(classKind, "", name)
	if store.IsNotFound(err) {
		return forbid(msgResizeNotAllow)
	}
	if err != nil {
		return fmt.Errorf("resize: get storageclass %s: %w", name, err)
	}
	if sc := o.(*api.StorageClass); sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		return forbid(msgResizeNotAllow)
	}
	return nil
}

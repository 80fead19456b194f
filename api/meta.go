package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is what the store, the API server and the controllers handle: any
// kind with Kubernetes metadata that can deep-copy itself. Objects read from
// the store are shared and must be copied before they are changed.
//
// +kubebuilder:object:generate=false
type Object interface {
	metav1.Object
	runtime.Object
}

// Well-known annotations and labels.
const (
	// AnnotationSource names the source that applied an object.
	AnnotationSource = "berth.dev/source"
	// AnnotationPrune set to PruneDisabled keeps an object when its source
	// no longer holds it.
	AnnotationPrune = "berth.dev/prune"
	// PruneDisabled is the value of AnnotationPrune that keeps an object.
	PruneDisabled = "disabled"
	// AnnotationMirror marks a mirror pod posted by an agent for a static pod.
	AnnotationMirror = "berth.dev/mirror"
	// AnnotationDefaultStorageClass marks the default StorageClass.
	AnnotationDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"

	LabelHostname = "kubernetes.io/hostname"
	LabelOS       = "kubernetes.io/os"
	LabelArch     = "kubernetes.io/arch"
	// LabelTopologyZone names a node's failure domain; the scheduler
	// spreads a controller's pods over zones as over nodes.
	LabelTopologyZone = "topology.kubernetes.io/zone"

	// NamespaceDefault is where namespaced objects go when none is named.
	NamespaceDefault = "default"
	// NamespaceSystem and NamespacePublic are Kubernetes' other system
	// namespaces, which operators and their tools expect to find: one for
	// the cluster's own workloads, one readable by all.
	NamespaceSystem = "kube-system"
	NamespacePublic = "kube-public"
)

// OwnerUIDs lists the UIDs of an object's owners; the store indexes them so
// that garbage collection finds dependents without a scan.
func OwnerUIDs(o metav1.Object) []string {
	refs := o.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	uids := make([]string, len(refs))
	for i, r := range refs {
		uids[i] = string(r.UID)
	}
	return uids
}

// ControllerOf returns the owner reference with controller=true, or nil.
// It points into o's references, without a copy (the store's indexes and
// every controller's event filter ask for it): read it, do not change it.
func ControllerOf(o metav1.Object) *metav1.OwnerReference {
	refs := o.GetOwnerReferences()
	for i := range refs {
		if c := refs[i].Controller; c != nil && *c {
			return &refs[i]
		}
	}
	return nil
}

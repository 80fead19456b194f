package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ReplicasField returns the spec.replicas of a kind with the scale
// subresource (Deployment, ReplicaSet, StatefulSet,
// ReplicationController), and false for other kinds. The API's scale
// subresource and the HorizontalPodAutoscaler change it through here.
func ReplicasField(obj Object) (**int32, bool) {
	switch o := obj.(type) {
	case *Deployment:
		return &o.Spec.Replicas, true
	case *ReplicaSet:
		return &o.Spec.Replicas, true
	case *StatefulSet:
		return &o.Spec.Replicas, true
	case *ReplicationController:
		return &o.Spec.Replicas, true
	}
	return nil, false
}

// Scalable reports whether a kind has the scale subresource.
func Scalable(k *Kind) bool {
	_, ok := ReplicasField(k.New())
	return ok
}

// ScaleStatus is what autoscaling/v1 Scale's status holds of a scalable
// object: its replicas and its pod selector, as a string ("" when the
// object's selector cannot select).
func ScaleStatus(obj Object) (replicas int32, selector string) {
	switch o := obj.(type) {
	case *Deployment:
		return o.Status.Replicas, selectorString(o.Spec.Selector)
	case *ReplicaSet:
		return o.Status.Replicas, selectorString(o.Spec.Selector)
	case *StatefulSet:
		return o.Status.Replicas, selectorString(o.Spec.Selector)
	case *ReplicationController:
		return o.Status.Replicas, labels.SelectorFromSet(o.Spec.Selector).String()
	}
	return 0, ""
}

func selectorString(ls *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return ""
	}
	return sel.String()
}

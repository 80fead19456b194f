package api

import (
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateUpdate checks the fields Kubernetes does not let an update
// change (selectors, a claim's spec, a volume's source, a pod's spec but
// its images and tolerations, immutable ConfigMaps and Secrets, an
// EndpointSlice's addressType), on objects already defaulted and
// validated. It is the API server's rule, and the
// applier's: a source cannot change what a user could not. For a Service
// it also keeps the old clusterIP when the update leaves it out, as
// Kubernetes does. Controllers write through the store and are not bound
// by it: the scheduler binds pods and the volume controller binds claims.
func ValidateUpdate(old, obj Object) field.ErrorList {
	spec := field.NewPath("spec")
	switch n := obj.(type) {
	case *Pod:
		return validatePodUpdate(old.(*Pod), n)
	case *ReplicaSet:
		return immutable(old.(*ReplicaSet).Spec.Selector, n.Spec.Selector, spec.Child("selector"))
	case *Deployment:
		return immutable(old.(*Deployment).Spec.Selector, n.Spec.Selector, spec.Child("selector"))
	case *Job:
		return validateJobUpdate(old.(*Job), n)
	case *StatefulSet:
		return validateStatefulSetUpdate(old.(*StatefulSet), n)
	case *DaemonSet:
		return immutable(old.(*DaemonSet).Spec.Selector, n.Spec.Selector, spec.Child("selector"))
	case *ControllerRevision:
		return immutable(string(old.(*ControllerRevision).Data.Raw), string(n.Data.Raw), field.NewPath("data"))
	case *PriorityClass:
		return validatePriorityClassUpdate(old.(*PriorityClass), n)
	case *PersistentVolumeClaim:
		return validateClaimUpdate(old.(*PersistentVolumeClaim), n)
	case *PersistentVolume:
		return validateVolumeUpdate(old.(*PersistentVolume), n)
	case *Service:
		return validateServiceUpdate(old.(*Service), n)
	case *PodDisruptionBudget:
		// Checked on every write, as a status write is not validated
		// again otherwise.
		return validatePodDisruptionBudgetStatus(&n.Status, field.NewPath("status"))
	case *CustomResourceDefinition:
		return validateCRDUpdate(old.(*CustomResourceDefinition), n)
	case *RoleBinding:
		return validateRoleRefUpdate(old.(*RoleBinding).RoleRef, n.RoleRef)
	case *ClusterRoleBinding:
		return validateRoleRefUpdate(old.(*ClusterRoleBinding).RoleRef, n.RoleRef)
	case *EndpointSlice:
		return immutable(old.(*EndpointSlice).AddressType, n.AddressType, field.NewPath("addressType"))
	case *StorageClass:
		o := old.(*StorageClass)
		var errs field.ErrorList
		errs = append(errs, immutable(o.Provisioner, n.Provisioner, field.NewPath("provisioner"))...)
		errs = append(errs, immutable(o.Parameters, n.Parameters, field.NewPath("parameters"))...)
		errs = append(errs, immutable(o.ReclaimPolicy, n.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
		return append(errs, immutable(o.VolumeBindingMode, n.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
	case *ConfigMap:
		o := old.(*ConfigMap)
		return immutableData(o.Immutable, n.Immutable, o.Data, n.Data, o.BinaryData, n.BinaryData)
	case *Secret:
		o := old.(*Secret)
		errs := immutable(o.Type, n.Type, field.NewPath("type"))
		return append(errs, immutableData(o.Immutable, n.Immutable, o.Data, n.Data, nil, nil)...)
	}
	return nil
}

func immutable(old, new any, p *field.Path) field.ErrorList {
	if equality.Semantic.DeepEqual(old, new) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, new, "field is immutable")}
}

// validatePodUpdate allows what Kubernetes allows to change in a pod's
// spec: container images, additions to the tolerations and removals of
// scheduling gates.
func validatePodUpdate(old, pod *Pod) field.ErrorList {
	if equality.Semantic.DeepEqual(old.Spec, pod.Spec) {
		// The common case (every status write): the same spec, most often
		// the same slices and maps, which the comparison passes at once.
		return nil
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	// Tolerations may only grow: every old one must still be there.
	for i, t := range old.Spec.Tolerations {
		found := false
		for _, n := range pod.Spec.Tolerations {
			if reflect.DeepEqual(t, n) {
				found = true
				break
			}
		}
		if !found {
			errs = append(errs, field.Forbidden(spec.Child("tolerations").Index(i), "existing toleration can not be modified or removed"))
		}
	}
	// Scheduling gates may only be removed, as in Kubernetes.
	if len(pod.Spec.SchedulingGates) > 0 {
		for i, g := range pod.Spec.SchedulingGates {
			if !slices.ContainsFunc(old.Spec.SchedulingGates, func(o corev1.PodSchedulingGate) bool { return o.Name == g.Name }) {
				errs = append(errs, field.Forbidden(spec.Child("schedulingGates").Index(i).Child("name"),
					fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
			}
		}
	}
	// Compare the rest with the allowed changes copied over.
	mutable := old.Spec.DeepCopy()
	mutable.Tolerations = pod.Spec.Tolerations
	mutable.SchedulingGates = pod.Spec.SchedulingGates
	copyImages(mutable.Containers, pod.Spec.Containers)
	copyImages(mutable.InitContainers, pod.Spec.InitContainers)
	if !equality.Semantic.DeepEqual(*mutable, pod.Spec) {
		errs = append(errs, field.Forbidden(spec, "pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image` and `spec.tolerations` (only additions to existing tolerations)"))
	}
	return errs
}

// copyImages copies images onto containers of the same name.
func copyImages(dst, src []Container) {
	if len(dst) != len(src) {
		return
	}
	for i := range dst {
		if dst[i].Name == src[i].Name {
			dst[i].Image = src[i].Image
		}
	}
}

// validateClaimUpdate: a claim's spec is fixed once made, except its
// storage request (expansion), and a volume name it did not have yet. The
// request may grow, never shrink, as in Kubernetes; whether it may grow
// is the StorageClass's to say, at admission.
func validateClaimUpdate(old, pvc *PersistentVolumeClaim) field.ErrorList {
	mutable := old.Spec.DeepCopy()
	mutable.Resources.Requests = pvc.Spec.Resources.Requests
	if old.Spec.VolumeName == "" {
		mutable.VolumeName = pvc.Spec.VolumeName
	}
	var errs field.ErrorList
	if !equality.Semantic.DeepEqual(*mutable, pvc.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests"))
	}
	size, before := pvc.Spec.Resources.Requests[ResourceStorage], old.Spec.Resources.Requests[ResourceStorage]
	if size.Cmp(before) < 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than previous value"))
	}
	return errs
}

// validateVolumeUpdate: where a volume's data lives, its mode and its node
// affinity do not change.
func validateVolumeUpdate(old, pv *PersistentVolume) field.ErrorList {
	spec := field.NewPath("spec")
	errs := immutable(old.Spec.PersistentVolumeSource, pv.Spec.PersistentVolumeSource, spec.Child("persistentVolumeSource"))
	errs = append(errs, immutable(old.Spec.VolumeMode, pv.Spec.VolumeMode, spec.Child("volumeMode"))...)
	if old.Spec.NodeAffinity != nil {
		errs = append(errs, immutable(old.Spec.NodeAffinity, pv.Spec.NodeAffinity, spec.Child("nodeAffinity"))...)
	}
	return errs
}

// validateServiceUpdate keeps what the allocator gave, as Kubernetes
// does: an update that leaves out clusterIP, the IP families or a node
// port keeps the old ones, and the addresses may change only when the
// type moves to or from ExternalName.
func validateServiceUpdate(old, svc *Service) field.ErrorList {
	if svc.Spec.Type == ServiceTypeNodePort || svc.Spec.Type == ServiceTypeLoadBalancer {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort != 0 {
				continue
			}
			for _, op := range old.Spec.Ports {
				if op.Port == p.Port && op.Protocol == p.Protocol {
					p.NodePort = op.NodePort
				}
			}
		}
	}
	external := old.Spec.Type == ServiceTypeExternalName || svc.Spec.Type == ServiceTypeExternalName
	if external {
		return nil
	}
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIP = old.Spec.ClusterIP
		svc.Spec.ClusterIPs = old.Spec.ClusterIPs
	}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = old.Spec.IPFamilies
	}
	if svc.Spec.IPFamilyPolicy == nil {
		svc.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
	}
	spec := field.NewPath("spec")
	errs := immutable(old.Spec.ClusterIP, svc.Spec.ClusterIP, spec.Child("clusterIP"))
	if len(old.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) > 0 && old.Spec.ClusterIPs[0] != svc.Spec.ClusterIPs[0] {
		errs = append(errs, field.Invalid(spec.Child("clusterIPs").Index(0), svc.Spec.ClusterIPs[0], "may not change once set"))
	}
	return errs
}

// immutableData: a ConfigMap or Secret marked immutable keeps its data and
// the mark.
func immutableData(oldMark, newMark *bool, oldData, newData any, oldBinary, newBinary any) field.ErrorList {
	if oldMark == nil || !*oldMark {
		return nil
	}
	var errs field.ErrorList
	if newMark == nil || !*newMark {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	errs = append(errs, immutableWhenMarked(oldData, newData, field.NewPath("data"))...)
	return append(errs, immutableWhenMarked(oldBinary, newBinary, field.NewPath("binaryData"))...)
}

func immutableWhenMarked(old, new any, p *field.Path) field.ErrorList {
	if equality.Semantic.DeepEqual(old, new) {
		return nil
	}
	return field.ErrorList{field.Forbidden(p, "field is immutable when `immutable` is set")}
}

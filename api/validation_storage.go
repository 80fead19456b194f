package api

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	accessModes     = []PersistentVolumeAccessMode{ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod}
	reclaimPolicies = []PersistentVolumeReclaimPolicy{PersistentVolumeReclaimRetain, PersistentVolumeReclaimDelete, PersistentVolumeReclaimRecycle}
	volumeModes     = []PersistentVolumeMode{PersistentVolumeFilesystem, PersistentVolumeBlock}
	bindingModes    = []VolumeBindingMode{VolumeBindingImmediate, VolumeBindingWaitForFirstConsumer}
	storageOnly     = []ResourceName{ResourceStorage}
)

func validateAccessModes(modes []PersistentVolumeAccessMode, p *field.Path) field.ErrorList {
	if len(modes) == 0 {
		return field.ErrorList{field.Required(p, "at least one access mode is required")}
	}
	var errs field.ErrorList
	for i, m := range modes {
		if !slices.Contains(accessModes, m) {
			errs = append(errs, field.NotSupported(p.Index(i), m, accessModes))
		}
	}
	if slices.Contains(modes, ReadWriteOncePod) && len(modes) > 1 {
		errs = append(errs, field.Forbidden(p, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validateVolumeMode(m *PersistentVolumeMode, p *field.Path) field.ErrorList {
	if m != nil && !slices.Contains(volumeModes, *m) {
		return field.ErrorList{field.NotSupported(p, *m, volumeModes)}
	}
	return nil
}

func validatePersistentVolumeSpec(spec *PersistentVolumeSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	cp := p.Child("capacity")
	if _, ok := spec.Capacity[ResourceStorage]; !ok {
		errs = append(errs, field.Required(cp.Key(string(ResourceStorage)), "a volume's capacity names its storage"))
	}
	errs = append(errs, validateResourceList(spec.Capacity, storageOnly, cp)...)

	set := 0
	if spec.HostPath != nil {
		set++
		errs = append(errs, validateHostPath(spec.HostPath, p.Child("hostPath"))...)
	}
	if spec.Local != nil {
		set++
		lp := p.Child("local", "path")
		switch {
		case spec.Local.Path == "":
			errs = append(errs, field.Required(lp, ""))
		case !strings.HasPrefix(spec.Local.Path, "/"):
			errs = append(errs, field.Invalid(lp, spec.Local.Path, "must be an absolute path"))
		default:
			errs = append(errs, validateNoBacksteps(spec.Local.Path, lp)...)
		}
		if spec.NodeAffinity == nil {
			errs = append(errs, field.Required(p.Child("nodeAffinity"), "a local volume lives on one node: name it"))
		}
	}
	errs = append(errs, exactlyOne(set, "hostPath or local", p)...)

	errs = append(errs, validateAccessModes(spec.AccessModes, p.Child("accessModes"))...)
	errs = append(errs, validateOneOf(spec.PersistentVolumeReclaimPolicy, reclaimPolicies, p.Child("persistentVolumeReclaimPolicy"))...)
	errs = append(errs, validateVolumeMode(spec.VolumeMode, p.Child("volumeMode"))...)
	if spec.StorageClassName != "" {
		errs = append(errs, validateDNSSubdomain(spec.StorageClassName, p.Child("storageClassName"))...)
	}
	if na := spec.NodeAffinity; na != nil {
		np := p.Child("nodeAffinity", "required")
		if na.Required == nil {
			errs = append(errs, field.Required(np, "must specify required node constraints"))
		} else {
			errs = append(errs, validateNodeSelector(na.Required, np)...)
		}
	}
	if ref := spec.ClaimRef; ref != nil {
		crp := p.Child("claimRef")
		errs = append(errs, validateObjectName(ref.Name, crp.Child("name"))...)
		if ref.Namespace != "" {
			errs = append(errs, validateDNSLabel(ref.Namespace, crp.Child("namespace"))...)
		}
	}
	return errs
}

func validatePersistentVolumeClaimSpec(spec *PersistentVolumeClaimSpec, p *field.Path) field.ErrorList {
	errs := validateAccessModes(spec.AccessModes, p.Child("accessModes"))
	errs = append(errs, validateLabelSelector(spec.Selector, false, p.Child("selector"))...)
	rp := p.Child("resources")
	errs = append(errs, validateResourceList(spec.Resources.Limits, storageOnly, rp.Child("limits"))...)
	errs = append(errs, validateResourceList(spec.Resources.Requests, storageOnly, rp.Child("requests"))...)
	sp := rp.Child("requests").Key(string(ResourceStorage))
	if q, ok := spec.Resources.Requests[ResourceStorage]; !ok {
		errs = append(errs, field.Required(sp, "a claim must request storage"))
	} else if q.Sign() == 0 {
		errs = append(errs, field.Invalid(sp, q.String(), "must be greater than zero"))
	}
	if spec.VolumeName != "" {
		errs = append(errs, validateDNSSubdomain(spec.VolumeName, p.Child("volumeName"))...)
	}
	if sc := spec.StorageClassName; sc != nil && *sc != "" {
		errs = append(errs, validateDNSSubdomain(*sc, p.Child("storageClassName"))...)
	}
	return append(errs, validateVolumeMode(spec.VolumeMode, p.Child("volumeMode"))...)
}

// maxStorageClassParameters is Kubernetes' cap on a class's parameters.
const maxStorageClassParameters = 512

func validateStorageClass(sc *StorageClass) field.ErrorList {
	var errs field.ErrorList
	pp := field.NewPath("provisioner")
	if sc.Provisioner == "" {
		errs = append(errs, field.Required(pp, "name the provisioner, such as "+LocalPathProvisioner))
	} else {
		for _, msg := range content.IsLabelKey(strings.ToLower(sc.Provisioner)) {
			errs = append(errs, field.Invalid(pp, sc.Provisioner, msg))
		}
	}
	if len(sc.Parameters) > maxStorageClassParameters {
		errs = append(errs, field.TooMany(field.NewPath("parameters"), len(sc.Parameters), maxStorageClassParameters))
	}
	// The local-path provisioner puts volumes under nodePath on the node:
	// a relative one would name a directory nobody can tell.
	if np, ok := sc.Parameters[LocalPathNodePath]; ok && sc.Provisioner == LocalPathProvisioner {
		errs = append(errs, validateLocalPathNodePath(np, field.NewPath("parameters").Key(LocalPathNodePath))...)
	}
	// Recycling is a property of a volume, never of a class.
	policies := []PersistentVolumeReclaimPolicy{PersistentVolumeReclaimDelete, PersistentVolumeReclaimRetain}
	if rp := sc.ReclaimPolicy; rp != nil && !slices.Contains(policies, *rp) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *rp, policies))
	}
	if bm := sc.VolumeBindingMode; bm != nil && !slices.Contains(bindingModes, *bm) {
		errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), *bm, bindingModes))
	}
	return errs
}

// validateLocalPathNodePath checks the nodePath of a local-path class: an
// absolute path without '..', as a local volume's path must be, for the
// volumes' paths are made from it. Empty is as good as unset: the node's
// local-path root.
func validateLocalPathNodePath(np string, p *field.Path) field.ErrorList {
	if np != "" && !strings.HasPrefix(np, "/") {
		return field.ErrorList{field.Invalid(p, np, "must be an absolute path")}
	}
	return validateNoBacksteps(np, p)
}

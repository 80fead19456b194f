package api

import (
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	podManagementPolicies      = []PodManagementPolicyType{OrderedReadyPodManagement, ParallelPodManagement}
	statefulSetStrategies      = []StatefulSetUpdateStrategyType{RollingUpdateStatefulSetStrategyType, OnDeleteStatefulSetStrategyType}
	daemonSetStrategies        = []DaemonSetUpdateStrategyType{RollingUpdateDaemonSetStrategyType, OnDeleteDaemonSetStrategyType}
	claimRetentionPolicyValues = []PersistentVolumeClaimRetentionPolicyType{RetainPersistentVolumeClaimRetentionPolicyType, DeletePersistentVolumeClaimRetentionPolicyType}
)

// validateStatefulSetSpec checks a StatefulSet as Kubernetes'
// ValidateStatefulSetSpec does, with its messages.
func validateStatefulSetSpec(spec *StatefulSetSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(p.Child("podManagementPolicy"), ""))
	case OrderedReadyPodManagement, ParallelPodManagement:
	default:
		errs = append(errs, field.NotSupported(p.Child("podManagementPolicy"), spec.PodManagementPolicy, podManagementPolicies))
	}
	up := p.Child("updateStrategy")
	switch spec.UpdateStrategy.Type {
	case "":
		errs = append(errs, field.Required(up, ""))
	case OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(up.Child("rollingUpdate"), spec.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", RollingUpdateStatefulSetStrategyType)))
		}
	case RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
			rp := up.Child("rollingUpdate")
			if ru.Partition != nil {
				errs = append(errs, validateNonNegative(*ru.Partition, rp.Child("partition"))...)
			}
			if ru.MaxUnavailable != nil {
				errs = append(errs, validatePositiveIntOrPercent(ru.MaxUnavailable, rp.Child("maxUnavailable"))...)
			}
		}
	default:
		errs = append(errs, field.NotSupported(up, spec.UpdateStrategy.Type, statefulSetStrategies))
	}
	if r := spec.PersistentVolumeClaimRetentionPolicy; r != nil {
		rp := p.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, validateRetentionValue(r.WhenDeleted, rp.Child("whenDeleted"))...)
		errs = append(errs, validateRetentionValue(r.WhenScaled, rp.Child("whenScaled"))...)
	}
	if o := spec.Ordinals; o != nil {
		errs = append(errs, validateNonNegative(o.Start, p.Child("ordinals", "start"))...)
	}
	errs = append(errs, validateReplicas(spec.Replicas, p.Child("replicas"))...)
	errs = append(errs, validateNonNegative(spec.MinReadySeconds, p.Child("minReadySeconds"))...)
	if r := spec.RevisionHistoryLimit; r != nil {
		errs = append(errs, validateNonNegative(*r, p.Child("revisionHistoryLimit"))...)
	}
	if spec.ServiceName != "" {
		for _, msg := range apivalidation.NameIsDNS1035Label(spec.ServiceName, false) {
			errs = append(errs, field.Invalid(p.Child("serviceName"), spec.ServiceName, msg))
		}
	}
	// The pods get a volume for each claim template, which the
	// template's mounts may name.
	template := &spec.Template
	if len(spec.VolumeClaimTemplates) > 0 {
		template = template.DeepCopy()
		StatefulSetVolumes(&template.Spec, spec.VolumeClaimTemplates, func(claim string) string { return claim })
	}
	errs = append(errs, validateSetSelector(spec.Selector, template, "statefulset", p)...)
	seen := map[string]bool{}
	for i := range spec.VolumeClaimTemplates {
		c := &spec.VolumeClaimTemplates[i]
		cp := p.Child("volumeClaimTemplates").Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("metadata", "name"), ""))
		} else {
			for _, msg := range apivalidation.NameIsDNSSubdomain(c.Name, false) {
				errs = append(errs, field.Invalid(cp.Child("metadata", "name"), c.Name, msg))
			}
			if seen[c.Name] {
				errs = append(errs, field.Duplicate(cp.Child("metadata", "name"), c.Name))
			}
			seen[c.Name] = true
		}
		errs = append(errs, validateLabels(c.Labels, cp.Child("metadata", "labels"))...)
		errs = append(errs, validatePersistentVolumeClaimSpec(&c.Spec, cp.Child("spec"))...)
	}
	return errs
}

// validateSetSelector checks a selector, required and not empty, and that
// it picks the template's pods; kind names the kind in the message, as
// Kubernetes' "empty selector is invalid for statefulset".
func validateSetSelector(selector *metav1.LabelSelector, template *PodTemplateSpec, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	sp := p.Child("selector")
	if selector == nil {
		errs = append(errs, field.Required(sp, ""))
	} else {
		errs = append(errs, validateLabelSelector(selector, false, sp)...)
		if len(selector.MatchLabels)+len(selector.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(sp, selector, "empty selector is invalid for "+kind))
		}
	}
	return append(errs, validateTemplate(template, selectorOf(selector), p.Child("template"))...)
}

func validateRetentionValue(v PersistentVolumeClaimRetentionPolicyType, p *field.Path) field.ErrorList {
	switch v {
	case RetainPersistentVolumeClaimRetentionPolicyType, DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, v, claimRetentionPolicyValues)}
}

// validatePositiveIntOrPercent checks a count that may not be zero and a
// percentage no more than 100%, as maxUnavailable of a StatefulSet.
func validatePositiveIntOrPercent(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	errs := validateIntOrPercent(v, p)
	if len(errs) > 0 {
		return errs
	}
	if v.Type == intstr.String && percent(v.StrVal) > 100 {
		errs = append(errs, field.Invalid(p, v.StrVal, "must not be greater than 100%"))
	}
	if isZero(v) {
		errs = append(errs, field.Invalid(p, v.String(), "must be greater than 0"))
	}
	return errs
}

// validateStatefulSetUpdate refuses the changes Kubernetes refuses: only
// replicas, ordinals, the template, the update strategy, the history
// limit, the retention policy and minReadySeconds may change.
func validateStatefulSetUpdate(old, n *StatefulSet) field.ErrorList {
	o := old.Spec.DeepCopy()
	o.Replicas = n.Spec.Replicas
	o.Ordinals = n.Spec.Ordinals
	o.Template = n.Spec.Template
	o.UpdateStrategy = n.Spec.UpdateStrategy
	o.RevisionHistoryLimit = n.Spec.RevisionHistoryLimit
	o.PersistentVolumeClaimRetentionPolicy = n.Spec.PersistentVolumeClaimRetentionPolicy
	o.MinReadySeconds = n.Spec.MinReadySeconds
	if !apiequality.Semantic.DeepEqual(*o, n.Spec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than "+
			"'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}

// validateDaemonSetSpec checks a DaemonSet as Kubernetes'
// ValidateDaemonSetSpec does, with its messages.
func validateDaemonSetSpec(spec *DaemonSetSpec, p *field.Path) field.ErrorList {
	errs := validateSetSelector(spec.Selector, &spec.Template, "daemonset", p)
	errs = append(errs, validateNonNegative(spec.MinReadySeconds, p.Child("minReadySeconds"))...)
	if r := spec.RevisionHistoryLimit; r != nil {
		errs = append(errs, validateNonNegative(*r, p.Child("revisionHistoryLimit"))...)
	}
	up := p.Child("updateStrategy")
	switch spec.UpdateStrategy.Type {
	case "":
		errs = append(errs, field.Required(up.Child("type"), ""))
	case OnDeleteDaemonSetStrategyType:
	case RollingUpdateDaemonSetStrategyType:
		ru := spec.UpdateStrategy.RollingUpdate
		if ru == nil {
			errs = append(errs, field.Required(up.Child("rollingUpdate"), ""))
			break
		}
		rp := up.Child("rollingUpdate")
		for _, c := range []struct {
			name string
			v    *intstr.IntOrString
		}{{"maxUnavailable", ru.MaxUnavailable}, {"maxSurge", ru.MaxSurge}} {
			if c.v == nil {
				continue
			}
			errs = append(errs, validateIntOrPercent(c.v, rp.Child(c.name))...)
			if c.v.Type == intstr.String && percent(c.v.StrVal) > 100 {
				errs = append(errs, field.Invalid(rp.Child(c.name), c.v.StrVal, "must not be greater than 100%"))
			}
		}
		if (ru.MaxUnavailable == nil || isZero(ru.MaxUnavailable)) && (ru.MaxSurge == nil || isZero(ru.MaxSurge)) {
			errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), ru.MaxUnavailable.String(), "cannot be 0 when maxSurge is 0"))
		}
	default:
		errs = append(errs, field.NotSupported(up.Child("type"), spec.UpdateStrategy.Type, daemonSetStrategies))
	}
	return errs
}

// validateControllerRevision checks a ControllerRevision: its data is
// required and its revision not negative.
func validateControllerRevision(r *ControllerRevision) field.ErrorList {
	var errs field.ErrorList
	if len(r.Data.Raw) == 0 && r.Data.Object == nil {
		errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(errs, validateNonNegative(r.Revision, field.NewPath("revision"))...)
}

// StatefulSetVolumes gives a pod spec a persistentVolumeClaim volume for
// each claim template, naming the claim claimName(template name), in place
// of a volume of the same name, as Kubernetes' StatefulSet controller
// does: a claim template takes precedence over a template volume.
func StatefulSetVolumes(spec *PodSpec, templates []PersistentVolumeClaim, claimName func(string) string) {
	for _, t := range templates {
		if t.Name == "" {
			continue
		}
		v := Volume{Name: t.Name, VolumeSource: VolumeSource{PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: claimName(t.Name)}}}
		i := slices.IndexFunc(spec.Volumes, func(v Volume) bool { return v.Name == t.Name })
		if i >= 0 {
			spec.Volumes[i] = v
		} else {
			spec.Volumes = append(spec.Volumes, v)
		}
	}
}

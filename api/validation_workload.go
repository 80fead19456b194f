package api

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateReplicas(r *int32, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	return validateNonNegative(*r, p)
}

// validateTemplate checks a workload's pod template and that the
// workload's selector picks the pods it makes: otherwise it would create
// pods forever.
func validateTemplate(t *PodTemplateSpec, sel labels.Selector, p *field.Path) field.ErrorList {
	errs := validateTemplateMeta(&t.ObjectMeta, p.Child("metadata"))
	if sel != nil && !sel.Empty() && !sel.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(p.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	return append(errs, validatePodSpec(&t.Spec, p.Child("spec"), workloadRestartPolicies)...)
}

// selectorOf converts a validated label selector; nil when it is not valid
// (its errors are reported already).
func selectorOf(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil
	}
	return sel
}

func validateReplicationControllerSpec(spec *ReplicationControllerSpec, p *field.Path) field.ErrorList {
	errs := validateReplicas(spec.Replicas, p.Child("replicas"))
	errs = append(errs, validateNonNegative(spec.MinReadySeconds, p.Child("minReadySeconds"))...)
	if len(spec.Selector) == 0 {
		errs = append(errs, field.Required(p.Child("selector"), "name the labels of the pods to keep, or give the template labels"))
	}
	errs = append(errs, validateLabels(spec.Selector, p.Child("selector"))...)
	if spec.Template == nil {
		return append(errs, field.Required(p.Child("template"), ""))
	}
	var sel labels.Selector
	if len(spec.Selector) > 0 {
		sel = labels.SelectorFromSet(spec.Selector)
	}
	return append(errs, validateTemplate(spec.Template, sel, p.Child("template"))...)
}

func validateReplicaSetSpec(spec *ReplicaSetSpec, p *field.Path) field.ErrorList {
	errs := validateReplicas(spec.Replicas, p.Child("replicas"))
	errs = append(errs, validateNonNegative(spec.MinReadySeconds, p.Child("minReadySeconds"))...)
	errs = append(errs, validateLabelSelector(spec.Selector, true, p.Child("selector"))...)
	return append(errs, validateTemplate(&spec.Template, selectorOf(spec.Selector), p.Child("template"))...)
}

var deploymentStrategies = []DeploymentStrategyType{RecreateDeploymentStrategyType, RollingUpdateDeploymentStrategyType}

func validateDeploymentSpec(spec *DeploymentSpec, p *field.Path) field.ErrorList {
	errs := validateReplicas(spec.Replicas, p.Child("replicas"))
	errs = append(errs, validateNonNegative(spec.MinReadySeconds, p.Child("minReadySeconds"))...)
	errs = append(errs, validateLabelSelector(spec.Selector, true, p.Child("selector"))...)
	errs = append(errs, validateTemplate(&spec.Template, selectorOf(spec.Selector), p.Child("template"))...)
	errs = append(errs, validateStrategy(&spec.Strategy, p.Child("strategy"))...)
	if r := spec.RevisionHistoryLimit; r != nil {
		errs = append(errs, validateNonNegative(*r, p.Child("revisionHistoryLimit"))...)
	}
	if d := spec.ProgressDeadlineSeconds; d != nil {
		dp := p.Child("progressDeadlineSeconds")
		errs = append(errs, validateNonNegative(*d, dp)...)
		if *d <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(dp, *d, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateStrategy(s *DeploymentStrategy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Type {
	case RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			break
		}
		rp := p.Child("rollingUpdate")
		errs = append(errs, validateIntOrPercent(s.RollingUpdate.MaxUnavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, validateIntOrPercent(s.RollingUpdate.MaxSurge, rp.Child("maxSurge"))...)
		if u := s.RollingUpdate.MaxUnavailable; u != nil && u.Type == intstr.String && percent(u.StrVal) > 100 {
			errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), u.StrVal, "must not be greater than 100%"))
		}
		if isZero(s.RollingUpdate.MaxUnavailable) && isZero(s.RollingUpdate.MaxSurge) {
			errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), s.RollingUpdate.MaxUnavailable.String(), "may not be 0 when `maxSurge` is 0"))
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), s.Type, deploymentStrategies))
	}
	return errs
}

// validateIntOrPercent checks a count that is a non-negative integer or a
// percentage such as "25%".
func validateIntOrPercent(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.String {
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(p, v.StrVal, msg))
		}
		return errs
	}
	return validateNonNegative(v.IntVal, p)
}

// percent returns the number of a valid percentage, or -1.
func percent(s string) int {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if err != nil {
		return -1
	}
	return n
}

// isZero reports whether an unset-or-zero count is zero: nil counts are
// defaulted to 25%, so they are not zero.
func isZero(v *intstr.IntOrString) bool {
	if v == nil {
		return false
	}
	if v.Type == intstr.String {
		return percent(v.StrVal) == 0
	}
	return v.IntVal == 0
}

package api

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var unhealthyPodEvictionPolicies = []UnhealthyPodEvictionPolicyType{AlwaysAllow, IfHealthyBudget}

// validatePodDisruptionBudgetSpec follows Kubernetes' policy validation:
// at most one of minAvailable and maxUnavailable, each a non-negative
// count or a percentage of at most 100%, a valid selector (which may be
// empty: it then selects every pod of the namespace), and a known
// unhealthy pod eviction policy.
func validatePodDisruptionBudgetSpec(spec *PodDisruptionBudgetSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(p, spec.MinAvailable.String()+", "+spec.MaxUnavailable.String(), "minAvailable and maxUnavailable cannot be both set"))
	}
	errs = append(errs, validateBudgetCount(spec.MinAvailable, p.Child("minAvailable"))...)
	errs = append(errs, validateBudgetCount(spec.MaxUnavailable, p.Child("maxUnavailable"))...)
	errs = append(errs, validateLabelSelector(spec.Selector, false, p.Child("selector"))...)
	if v := spec.UnhealthyPodEvictionPolicy; v != nil {
		errs = append(errs, validateOneOf(*v, unhealthyPodEvictionPolicies, p.Child("unhealthyPodEvictionPolicy"))...)
	}
	return errs
}

// validateBudgetCount checks minAvailable or maxUnavailable.
func validateBudgetCount(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	errs := validateIntOrPercent(v, p)
	if v != nil && v.Type == intstr.String && len(errs) == 0 && percent(v.StrVal) > 100 {
		errs = append(errs, field.Invalid(p, v.StrVal, "must not be greater than 100%"))
	}
	return errs
}

// validatePodDisruptionBudgetStatus checks the counts of a budget's
// status, as Kubernetes checks a policy/v1 status write: none negative.
func validatePodDisruptionBudgetStatus(s *PodDisruptionBudgetStatus, p *field.Path) field.ErrorList {
	errs := validateNonNegative(s.DisruptionsAllowed, p.Child("disruptionsAllowed"))
	errs = append(errs, validateNonNegative(s.CurrentHealthy, p.Child("currentHealthy"))...)
	errs = append(errs, validateNonNegative(s.DesiredHealthy, p.Child("desiredHealthy"))...)
	return append(errs, validateNonNegative(s.ExpectedPods, p.Child("expectedPods"))...)
}

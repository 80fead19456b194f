package api

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The RBAC rules follow Kubernetes' pkg/apis/rbac/validation, message for
// message, so that a user who knows kubectl's errors recognises berth's.

// validatePolicyRules checks every rule of a Role or ClusterRole.
func validatePolicyRules(rules []PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		errs = append(errs, validatePolicyRule(r, namespaced, p.Index(i))...)
	}
	return errs
}

func validatePolicyRule(rule PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// validateClusterRole adds the aggregation rule's checks.
func validateClusterRole(r *ClusterRole) field.ErrorList {
	errs := validatePolicyRules(r.Rules, false, field.NewPath("rules"))
	if r.AggregationRule == nil {
		return errs
	}
	p := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	for i := range r.AggregationRule.ClusterRoleSelectors {
		errs = append(errs, validateLabelSelector(&r.AggregationRule.ClusterRoleSelectors[i], false, p.Index(i))...)
	}
	return errs
}

// validateBinding checks a RoleBinding's or ClusterRoleBinding's roleRef
// and subjects.
func validateBinding(ref RoleRef, subjects []Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	if ref.APIGroup != RBACGroup {
		errs = append(errs, field.NotSupported(field.NewPath("roleRef", "apiGroup"), ref.APIGroup, []string{RBACGroup}))
	}
	kinds := []string{RoleRefClusterRole}
	if namespaced {
		kinds = []string{RoleRefRole, RoleRefClusterRole}
	}
	errs = append(errs, validateOneOf(ref.Kind, kinds, field.NewPath("roleRef", "kind"))...)
	if ref.Name == "" {
		errs = append(errs, field.Required(field.NewPath("roleRef", "name"), ""))
	} else {
		for _, msg := range path.ValidatePathSegmentName(ref.Name, false) {
			errs = append(errs, field.Invalid(field.NewPath("roleRef", "name"), ref.Name, msg))
		}
	}
	p := field.NewPath("subjects")
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, p.Index(i))...)
	}
	return errs
}

func validateSubject(s Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case SubjectServiceAccount:
		if s.Name != "" {
			for _, msg := range apivalidation.ValidateServiceAccountName(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case SubjectUser, SubjectGroup:
		if s.APIGroup != RBACGroup {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{RBACGroup}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{SubjectServiceAccount, SubjectUser, SubjectGroup}))
	}
	return errs
}

// validateRoleRefUpdate: a binding's roleRef cannot change, as in
// Kubernetes; delete and create the binding instead.
func validateRoleRefUpdate(old, ref RoleRef) field.ErrorList {
	if old != ref {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

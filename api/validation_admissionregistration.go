package api

import (
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kubernetes' validation of the admission kinds
// (pkg/apis/admissionregistration/validation), with its messages. berth
// speaks AdmissionReview v1 only, so a webhook must accept v1.

var (
	supportedOperations    = sets.New("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
	supportedScopes        = sets.New("*", "Cluster", "Namespaced")
	supportedFailurePolicy = sets.New("Ignore", "Fail")
	supportedMatchPolicy   = sets.New("Exact", "Equivalent")
	supportedSideEffects   = sets.New("None", "NoneOnDryRun")
	supportedReinvocation  = sets.New("Never", "IfNeeded")
	supportedReviewVersion = []string{"v1"}
	supportedActions       = sets.New("Deny", "Warn", "Audit")
	supportedReasons       = sets.New("Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge")
)

// webhookFields are the fields the two webhook kinds share, for one check.
type webhookFields struct {
	name                    string
	clientConfig            *admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	matchConditions         []admissionregistrationv1.MatchCondition
}

func validateValidatingWebhookConfiguration(c *ValidatingWebhookConfiguration) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(webhookFields{w.Name, &w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects,
			w.TimeoutSeconds, w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions}, names, p)...)
	}
	return errs
}

func validateMutatingWebhookConfiguration(c *MutatingWebhookConfiguration) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(webhookFields{w.Name, &w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects,
			w.TimeoutSeconds, w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions}, names, p)...)
		if w.ReinvocationPolicy != nil && !supportedReinvocation.Has(string(*w.ReinvocationPolicy)) {
			errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *w.ReinvocationPolicy, sets.List(supportedReinvocation)))
		}
	}
	return errs
}

func validateWebhook(w webhookFields, names sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case w.name == "":
		errs = append(errs, field.Required(p.Child("name"), ""))
	case len(strings.Split(w.name, ".")) < 3:
		errs = append(errs, field.Invalid(p.Child("name"), w.name, "should be a domain with at least three segments separated by dots"))
	default:
		for _, msg := range utilvalidation.IsDNS1123Subdomain(w.name) {
			errs = append(errs, field.Invalid(p.Child("name"), w.name, msg))
		}
		if names.Has(w.name) {
			errs = append(errs, field.Duplicate(p.Child("name"), w.name))
		}
		names.Insert(w.name)
	}
	for i := range w.rules {
		errs = append(errs, validateRuleWithOperations(&w.rules[i], p.Child("rules").Index(i))...)
	}
	if w.failurePolicy != nil && !supportedFailurePolicy.Has(string(*w.failurePolicy)) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *w.failurePolicy, sets.List(supportedFailurePolicy)))
	}
	if w.matchPolicy != nil && !supportedMatchPolicy.Has(string(*w.matchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *w.matchPolicy, sets.List(supportedMatchPolicy)))
	}
	switch {
	case w.sideEffects == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(sets.List(supportedSideEffects), ", "))))
	case !supportedSideEffects.Has(string(*w.sideEffects)):
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *w.sideEffects, sets.List(supportedSideEffects)))
	}
	if w.timeoutSeconds != nil && (*w.timeoutSeconds < 1 || *w.timeoutSeconds > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *w.timeoutSeconds, "the timeout value must be between 1 and 30 seconds"))
	}
	errs = append(errs, validateReviewVersions(w.admissionReviewVersions, p.Child("admissionReviewVersions"))...)
	errs = append(errs, validateClientConfig(w.clientConfig, p.Child("clientConfig"))...)
	if w.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.namespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if w.objectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.objectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	errs = append(errs, validateMatchConditions(w.matchConditions, p.Child("matchConditions"))...)
	return errs
}

func validateReviewVersions(versions []string, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, fmt.Sprintf("must specify one of %v", strings.Join(supportedReviewVersion, ", ")))}
	}
	seen := sets.New[string]()
	var errs field.ErrorList
	ok := false
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
		}
		seen.Insert(v)
		for _, s := range supportedReviewVersion {
			ok = ok || v == s
		}
	}
	if !ok {
		errs = append(errs, field.Invalid(p, versions, fmt.Sprintf("must include at least one of %v", strings.Join(supportedReviewVersion, ", "))))
	}
	return errs
}

func validateMatchConditions(conds []admissionregistrationv1.MatchCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	if len(conds) > 64 {
		errs = append(errs, field.TooMany(p, len(conds), 64))
	}
	for i, c := range conds {
		cp := p.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(cp.Child("name"), ""))
		case names.Has(c.Name):
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		default:
			for _, msg := range utilvalidation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
			}
		}
		names.Insert(c.Name)
		if c.Expression == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		}
	}
	return errs
}

func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && hasWildcard(r.Operations) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !supportedOperations.Has(string(op)) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, sets.List(supportedOperations)))
		}
	}
	return append(errs, validateRule(&r.Rule, p)...)
}

func hasWildcard[T ~string](list []T) bool {
	for _, s := range list {
		if s == "*" {
			return true
		}
	}
	return false
}

func validateRule(r *admissionregistrationv1.Rule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && hasWildcard(r.APIVersions) {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), ""))
	}
	seen := sets.New[string]()
	for i, res := range r.Resources {
		rp := p.Child("resources").Index(i)
		if res == "" {
			errs = append(errs, field.Required(rp, ""))
			continue
		}
		if strings.Count(res, "/") > 1 {
			errs = append(errs, field.Invalid(rp, res, "resource can have at most one '/'"))
		}
		if seen.Has(res) {
			errs = append(errs, field.Duplicate(rp, res))
		}
		seen.Insert(res)
	}
	if r.Scope != nil && !supportedScopes.Has(string(*r.Scope)) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, sets.List(supportedScopes)))
	}
	return errs
}

func validateClientConfig(cc *admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case cc.URL == nil && cc.Service == nil:
		errs = append(errs, field.Required(p, "exactly one of url or service is required"))
	case cc.URL != nil && cc.Service != nil:
		errs = append(errs, field.Required(p, "exactly one of url or service is required"))
	case cc.URL != nil:
		up := p.Child("url")
		u, err := url.Parse(*cc.URL)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(up, *cc.URL, err.Error()))
		case u.Scheme != "https":
			errs = append(errs, field.Invalid(up, u.Scheme, "'https' is the only allowed URL scheme"))
		case u.Host == "":
			errs = append(errs, field.Invalid(up, u.Host, "host must be specified"))
		case u.User != nil:
			errs = append(errs, field.Invalid(up, u.User.String(), "user information is not permitted in the URL"))
		case u.Fragment != "" || u.RawQuery != "":
			errs = append(errs, field.Invalid(up, *cc.URL, "fragments and query parameters are not permitted in the URL"))
		}
	default:
		sp := p.Child("service")
		if cc.Service.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), "service name is required"))
		}
		if cc.Service.Namespace == "" {
			errs = append(errs, field.Required(sp.Child("namespace"), "service namespace is required"))
		}
		if cc.Service.Path != nil && !strings.HasPrefix(*cc.Service.Path, "/") {
			errs = append(errs, field.Invalid(sp.Child("path"), *cc.Service.Path, "must start with a '/'"))
		}
		if port := cc.Service.Port; port != nil {
			for _, msg := range utilvalidation.IsValidPortNum(int(*port)) {
				errs = append(errs, field.Invalid(sp.Child("port"), *port, msg))
			}
		}
	}
	return errs
}

func validateMatchResources(m *admissionregistrationv1.MatchResources, p *field.Path, policy bool) field.ErrorList {
	var errs field.ErrorList
	if m == nil {
		if policy {
			errs = append(errs, field.Required(p, ""))
		}
		return errs
	}
	if m.MatchPolicy != nil && !supportedMatchPolicy.Has(string(*m.MatchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, sets.List(supportedMatchPolicy)))
	}
	if m.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	if policy && len(m.ResourceRules) == 0 {
		errs = append(errs, field.Required(p.Child("resourceRules"), ""))
	}
	for i := range m.ResourceRules {
		errs = append(errs, validateRuleWithOperations(&m.ResourceRules[i].RuleWithOperations, p.Child("resourceRules").Index(i))...)
	}
	for i := range m.ExcludeResourceRules {
		errs = append(errs, validateRuleWithOperations(&m.ExcludeResourceRules[i].RuleWithOperations, p.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func validateValidatingAdmissionPolicy(vap *ValidatingAdmissionPolicy) field.ErrorList {
	var errs field.ErrorList
	s := &vap.Spec
	p := field.NewPath("spec")
	if s.FailurePolicy != nil && !supportedFailurePolicy.Has(string(*s.FailurePolicy)) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *s.FailurePolicy, sets.List(supportedFailurePolicy)))
	}
	if pk := s.ParamKind; pk != nil {
		if pk.APIVersion == "" {
			errs = append(errs, field.Required(p.Child("paramKind", "apiVersion"), ""))
		}
		if pk.Kind == "" {
			errs = append(errs, field.Required(p.Child("paramKind", "kind"), ""))
		}
	}
	errs = append(errs, validateMatchResources(s.MatchConstraints, p.Child("matchConstraints"), true)...)
	if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(p.Child("validations"), "validations or auditAnnotations must contain at least one item"))
	}
	for i, v := range s.Validations {
		vp := p.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
		}
		if strings.Contains(v.Message, "\n") {
			errs = append(errs, field.Invalid(vp.Child("message"), v.Message, "message must not contain line breaks"))
		}
		if v.Reason != nil && !supportedReasons.Has(string(*v.Reason)) {
			errs = append(errs, field.NotSupported(vp.Child("reason"), *v.Reason, sets.List(supportedReasons)))
		}
	}
	for i, a := range s.AuditAnnotations {
		ap := p.Child("auditAnnotations").Index(i)
		if a.Key == "" {
			errs = append(errs, field.Required(ap.Child("key"), ""))
		}
		if a.ValueExpression == "" {
			errs = append(errs, field.Required(ap.Child("valueExpression"), ""))
		}
	}
	names := sets.New[string]()
	for i, v := range s.Variables {
		vp := p.Child("variables").Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(vp.Child("name"), "name is not specified"))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		names.Insert(v.Name)
		if v.Expression == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
		}
	}
	return append(errs, validateMatchConditions(s.MatchConditions, p.Child("matchConditions"))...)
}

func validateValidatingAdmissionPolicyBinding(b *ValidatingAdmissionPolicyBinding) field.ErrorList {
	var errs field.ErrorList
	s := &b.Spec
	p := field.NewPath("spec")
	if s.PolicyName == "" {
		errs = append(errs, field.Required(p.Child("policyName"), ""))
	}
	if pr := s.ParamRef; pr != nil {
		pp := p.Child("paramRef")
		if (pr.Name == "") == (pr.Selector == nil) {
			errs = append(errs, field.Forbidden(pp.Child("name"), "one of name or selector must be specified"))
		}
		if pr.Selector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(pr.Selector, metav1validation.LabelSelectorValidationOptions{}, pp.Child("selector"))...)
		}
		if a := pr.ParameterNotFoundAction; a != nil && *a != admissionregistrationv1.DenyAction && *a != admissionregistrationv1.AllowAction {
			errs = append(errs, field.NotSupported(pp.Child("parameterNotFoundAction"), *a, []string{"Allow", "Deny"}))
		}
	}
	errs = append(errs, validateMatchResources(s.MatchResources, p.Child("matchResources"), false)...)
	ap := p.Child("validationActions")
	if len(s.ValidationActions) == 0 {
		errs = append(errs, field.Required(ap, ""))
	}
	seen := sets.New[string]()
	for i, a := range s.ValidationActions {
		if !supportedActions.Has(string(a)) {
			errs = append(errs, field.NotSupported(ap.Index(i), a, sets.List(supportedActions)))
		}
		if seen.Has(string(a)) {
			errs = append(errs, field.Duplicate(ap.Index(i), a))
		}
		seen.Insert(string(a))
	}
	if seen.Has("Deny") && seen.Has("Warn") {
		errs = append(errs, field.Invalid(ap, s.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}

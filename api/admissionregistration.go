package api

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The admission kinds are Kubernetes' own types, as the
// CustomResourceDefinition is: a webhook configuration or a policy means
// here what it means there, and policy engines' manifests decode as they
// are.
type (
	// ValidatingWebhookConfiguration names webhooks the API server asks
	// whether a write may happen.
	ValidatingWebhookConfiguration = admissionregistrationv1.ValidatingWebhookConfiguration
	// MutatingWebhookConfiguration names webhooks that may change an
	// object (JSONPatch) before it is validated and stored.
	MutatingWebhookConfiguration = admissionregistrationv1.MutatingWebhookConfiguration
	// ValidatingAdmissionPolicy holds CEL rules a write must pass.
	ValidatingAdmissionPolicy = admissionregistrationv1.ValidatingAdmissionPolicy
	// ValidatingAdmissionPolicyBinding says where a policy applies and
	// what a failed rule does (Deny, Warn, Audit).
	ValidatingAdmissionPolicyBinding = admissionregistrationv1.ValidatingAdmissionPolicyBinding
)

// AdmissionRegistrationV1 serves the webhook configurations and the
// validating admission policies.
var AdmissionRegistrationV1 = admissionregistrationv1.SchemeGroupVersion

// defaultRule gives a rule Kubernetes' scope default: every scope.
func defaultRule(r *admissionregistrationv1.Rule) {
	if r.Scope == nil {
		s := admissionregistrationv1.AllScopes
		r.Scope = &s
	}
}

// defaultWebhookCommon applies Kubernetes' defaults (SetDefaults_
// ValidatingWebhook and SetDefaults_MutatingWebhook) to the fields the
// two webhook kinds share.
func defaultWebhookCommon(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType,
	ns, obj **metav1.LabelSelector, timeout **int32, cc *admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) {
	if *fp == nil {
		f := admissionregistrationv1.Fail
		*fp = &f
	}
	if *mp == nil {
		m := admissionregistrationv1.Equivalent
		*mp = &m
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *obj == nil {
		*obj = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		t := int32(10)
		*timeout = &t
	}
	if cc.Service != nil && cc.Service.Port == nil {
		p := int32(443)
		cc.Service.Port = &p
	}
	for i := range rules {
		defaultRule(&rules[i].Rule)
	}
}

func defaultValidatingWebhookConfiguration(c *ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultWebhookCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, &w.ClientConfig, w.Rules)
	}
}

func defaultMutatingWebhookConfiguration(c *MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultWebhookCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, &w.ClientConfig, w.Rules)
		if w.ReinvocationPolicy == nil {
			r := admissionregistrationv1.NeverReinvocationPolicy
			w.ReinvocationPolicy = &r
		}
	}
}

// defaultMatchResources applies Kubernetes' defaults to a policy's or a
// binding's matchResources.
func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	if m.MatchPolicy == nil {
		p := admissionregistrationv1.Equivalent
		m.MatchPolicy = &p
	}
	for i := range m.ResourceRules {
		defaultRule(&m.ResourceRules[i].RuleWithOperations.Rule)
	}
	for i := range m.ExcludeResourceRules {
		defaultRule(&m.ExcludeResourceRules[i].RuleWithOperations.Rule)
	}
}

func defaultValidatingAdmissionPolicy(p *ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		f := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &f
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

func defaultValidatingAdmissionPolicyBinding(b *ValidatingAdmissionPolicyBinding) {
	defaultMatchResources(b.Spec.MatchResources)
	if b.Spec.ParamRef != nil && b.Spec.ParamRef.ParameterNotFoundAction == nil {
		a := admissionregistrationv1.DenyAction
		b.Spec.ParamRef.ParameterNotFoundAction = &a
	}
}

package main

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/berth-dev/berth/api"
)

// fixtureWebhooks are a validating configuration of two webhooks and a
// mutating one of one.
func fixtureWebhooks() (validating, mutating []api.Object) {
	u := "https://policy.example.com/validate"
	cc := admissionregistrationv1.WebhookClientConfig{URL: &u}
	v := &api.ValidatingWebhookConfiguration{ObjectMeta: meta("", "policy", 2*time.Hour, nil),
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a.policy.example.com", ClientConfig: cc}, {Name: "b.policy.example.com", ClientConfig: cc}}}
	m := &api.MutatingWebhookConfiguration{ObjectMeta: meta("", "labels", 5*time.Minute, nil),
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "label.policy.example.com", ClientConfig: cc}}}
	return []api.Object{v}, []api.Object{m}
}

// fixturePolicies are a policy with a parameter kind and one without, and
// bindings with and without a paramRef.
func fixturePolicies() (policies, bindings []api.Object) {
	rule := admissionregistrationv1.Validation{Expression: "object.spec.replicas <= 5"}
	limits := &api.ValidatingAdmissionPolicy{ObjectMeta: meta("", "replica-limit", 3*time.Hour, nil),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			Validations: []admissionregistrationv1.Validation{rule, rule}}}
	names := &api.ValidatingAdmissionPolicy{ObjectMeta: meta("", "names", 10*time.Minute, nil),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{rule}}}
	withParams := &api.ValidatingAdmissionPolicyBinding{ObjectMeta: meta("", "replica-limit-prod", 3*time.Hour, nil),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "replica-limit",
			ParamRef: &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "prod"}}}
	plain := &api.ValidatingAdmissionPolicyBinding{ObjectMeta: meta("", "names", 10*time.Minute, nil),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "names"}}
	return []api.Object{names, limits}, []api.Object{plain, withParams}
}

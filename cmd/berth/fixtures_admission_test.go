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

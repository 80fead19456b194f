// Package admission holds the admission the cluster's users configure:
// the webhooks of ValidatingWebhookConfigurations and
// MutatingWebhookConfigurations, called as kube-apiserver calls them
// (k8s.io/apiserver's matching, AdmissionReview and webhook client), and
// ValidatingAdmissionPolicies, whose CEL rules k8s.io/apiserver evaluates.
package admission

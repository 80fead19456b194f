// Package serviceaccount keeps a `default` ServiceAccount in every
// namespace that is not being deleted, as Kubernetes' service-account
// controller does, so that every pod has an identity to run as.
package serviceaccount

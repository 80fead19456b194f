// Package api holds berth's kinds as Go structs with Kubernetes JSON names,
// the registry that maps apiVersion and kind to types and resource names, and
// the one decoder, defaulting and validation that every source, the API
// server and `berth validate` share.
//
// +kubebuilder:object:generate=true
// +k8s:openapi-gen=true
package api

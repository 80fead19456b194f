// Package strategy holds the per-kind rules of writes that the API server
// and the applier share, as kube-apiserver's registry strategies: what a
// create may not set, and what an update of the object keeps.
package strategy

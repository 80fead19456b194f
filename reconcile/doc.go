// Package reconcile holds berth's controller runtime: a rate-limited work
// queue of object keys and the Controller whose workers drain it into a
// Reconciler. The controllers themselves live in subpackages.
package reconcile

// Package reconcile holds berth's controller runtime: a rate-limited work
// queue of object keys, the Controller whose workers drain it into a
// Reconciler, and the Expectations a controller that creates pods keeps
// of its own writes. The controllers themselves live in subpackages,
// which never import one another: what two share is a package of its
// own (members, history, event).
package reconcile

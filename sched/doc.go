// Package sched places pending pods on nodes: a pure core of filter and
// score plugins with kube-scheduler's semantics and formulas, and around it
// a node cache, a scheduling queue and a batching binder fed by store
// watches.
package sched

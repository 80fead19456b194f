// Package controlplane wires the store, the API server, its credentials,
// the controllers, scheduler, sources and DNS into one runnable server:
// what `berth server`, `berth sim` and the end-to-end tests start. Over an
// etcd store, several such servers share one cluster: one leads, the
// others follow and forward writes to it.
package controlplane

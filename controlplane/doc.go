// Package controlplane wires the store, the API server, the controllers,
// scheduler, sources and DNS into one runnable server: what `berth
// server`, `berth sim` and the end-to-end tests start. Its credentials
// are controlplane/pki's, and controlplane/agentproxy carries the API's
// requests to agents. Over an etcd store, several such servers share one
// cluster: one leads, the others follow and forward writes to it.
package controlplane

// Package controlplane wires the store, the API server, its credentials
// and, as they land, the controllers, scheduler and DNS into one runnable
// server: what `berth server`, `berth sim` and the end-to-end tests start.
package controlplane

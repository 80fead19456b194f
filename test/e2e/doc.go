// Package e2e drives the berth binary as a user would: it builds it,
// starts `berth server` on free loopback ports with a temporary data dir,
// applies manifests with the CLI and polls `berth get -o json` until a
// condition holds or a deadline passes.
package e2e

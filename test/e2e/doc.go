// Package e2e drives the berth binary as a user would: it builds it,
// starts `berth server` on free loopback ports with a temporary data dir,
// applies manifests with the CLI and polls `berth get -o json` until a
// condition holds or a deadline passes.
//
// A test that shares nothing with another calls t.Parallel: its own
// server and data dir, free ports, pods that listen only on free ports
// or on node addresses no other parallel test uses, and nothing it
// measures. Those that measure time (failover, latency, linearizability),
// cut or build networks, run containerd or listen on a fixed port of an
// address another test also uses stay serial, and so run first, alone.
package e2e

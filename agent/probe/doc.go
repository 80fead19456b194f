// Package probe runs a container's exec, httpGet and tcpSocket probes once
// and turns a series of results into a verdict by the probe's thresholds.
package probe

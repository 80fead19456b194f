// Package agent is berth's node agent: it joins the cluster, registers and
// heartbeats its Node, runs the pods bound to it (and its static pods)
// through a container runtime, probes them and reports their status. It
// wires in agent/eviction, which evicts under pressure, and agent/server,
// which serves the API server the pods' logs, exec, attach and
// port-forward. It talks to the control plane only through the API,
// in-process or not.
package agent

// Package agent is berth's node agent: it joins the cluster, registers and
// heartbeats its Node, runs the pods bound to it (and its static pods)
// through a container runtime, probes them, reports their status, evicts
// under pressure and serves the API server their logs, exec, attach and
// port-forward (agent/server). It talks to the control plane only through the API,
// in-process or not.
package agent

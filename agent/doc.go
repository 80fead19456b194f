// Package agent is berth's node agent: it joins the cluster and runs the
// pods bound to it (and its static pods) through a container runtime. It
// wires in agent/pods, whose workers run, probe and report each pod,
// agent/node, which registers and heartbeats the Node, agent/eviction,
// which evicts under pressure, and agent/server, which serves the API
// server the pods' logs, exec, attach and port-forward. It talks to the
// control plane only through the API, in-process or not.
package agent

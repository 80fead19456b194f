// Package server is the agent's HTTPS server for the API server alone:
// a container's log, exec, attach, a pod's port-forward and the node's
// resource metrics, as the kubelet's server answers kube-apiserver. It
// knows the pods only through the lookups its Options give it.
package server

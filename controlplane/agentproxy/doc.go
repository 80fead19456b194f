// Package agentproxy carries the API's requests that only a node's agent
// can answer (a pod's log, exec, attach and port-forward, and the
// resource metrics of metrics.k8s.io) to that agent, over TLS verified
// against the node CA, as kube-apiserver reaches its kubelets.
package agentproxy

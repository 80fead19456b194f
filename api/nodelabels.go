package api

import "strings"

// Label namespaces of Kubernetes' node label policy.
const (
	// LabelNamespaceNodeRestriction holds labels only an administrator
	// sets on a Node, so workloads may be steered by them to nodes that
	// cannot claim them on their own.
	LabelNamespaceNodeRestriction = "node-restriction.kubernetes.io"
	// LabelNodeRolePrefix starts the role labels (node-role.kubernetes.io/
	// control-plane, …), which a node may not give itself.
	LabelNodeRolePrefix = "node-role.kubernetes.io/"
)

// kubeletLabels are the kubernetes.io and k8s.io labels a node may set on
// its own Node, as the kubelet's label policy lists them.
var kubeletLabels = map[string]bool{
	LabelHostname:                              true,
	LabelTopologyZone:                          true,
	"topology.kubernetes.io/region":            true,
	"failure-domain.beta.kubernetes.io/zone":   true,
	"failure-domain.beta.kubernetes.io/region": true,
	"beta.kubernetes.io/instance-type":         true,
	"node.kubernetes.io/instance-type":         true,
	LabelOS:                                    true,
	LabelArch:                                  true,
	"beta.kubernetes.io/os":                    true,
	"beta.kubernetes.io/arch":                  true,
}

// kubeletLabelNamespaces are the namespaces (and their subdomains) of
// kubernetes.io labels a node may set freely.
var kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}

// NodeMaySetLabel reports whether a node may set, change or remove the
// label key on its own Node, by Kubernetes' NodeRestriction rules: never
// one under node-restriction.kubernetes.io, and of the kubernetes.io and
// k8s.io namespaces only the kubelet's own (hostname, os, arch, zone,
// region, instance type, and kubelet.kubernetes.io/ and
// node.kubernetes.io/ labels), so never a node-role.kubernetes.io/ role.
// Every other label is the node's to set.
func NodeMaySetLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	if inDomain(ns, LabelNamespaceNodeRestriction) {
		return false
	}
	if !inDomain(ns, "kubernetes.io") && !inDomain(ns, "k8s.io") {
		return true
	}
	if kubeletLabels[key] {
		return true
	}
	for _, d := range kubeletLabelNamespaces {
		if inDomain(ns, d) {
			return true
		}
	}
	return false
}

// inDomain reports whether name is domain or one of its subdomains.
func inDomain(name, domain string) bool {
	return name == domain || strings.HasSuffix(name, "."+domain)
}

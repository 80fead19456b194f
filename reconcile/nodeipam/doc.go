// Package nodeipam gives each Node a spec.podCIDR out of the cluster CIDR,
// as kube-controller-manager's range allocator does, and frees it when the
// Node goes.
package nodeipam

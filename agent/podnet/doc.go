// Package podnet joins the pod networks of a cluster's nodes: it routes
// every other node's podCIDR via that node's address (host-gw, as
// flannel's backend of that name), turns on IP forwarding, and serves a
// node-local DNS forwarder on the pod bridge's gateway address.
package podnet

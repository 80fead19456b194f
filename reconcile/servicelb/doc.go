// Package servicelb serves LoadBalancer Services on the nodes'
// addresses, as k3s's ServiceLB does: it fills in their
// status.loadBalancer.ingress, which every node's service proxy answers
// on.
package servicelb

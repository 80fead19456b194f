// Package daemonset holds the DaemonSet controller: one pod on every node
// the template's node selector, affinity and tolerations admit, placed by
// the scheduler through node affinity for that node, rolled out node by
// node within maxUnavailable and maxSurge.
package daemonset

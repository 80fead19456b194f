// Package eviction keeps a node alive under pressure, as the kubelet's
// eviction manager does: it compares the node's memory and disk with the
// hard thresholds, reports MemoryPressure and DiskPressure, and evicts
// the pod it ranks first, or a pod over its ephemeral-storage limits. It
// reads the node and its pods through the functions its Options give it.
package eviction

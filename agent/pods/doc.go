// Package pods runs the pods of one node: its Manager keeps a worker per
// pod that sets up the pod's volumes and files, starts, probes and stops
// its containers through the runtime, and reports the pod's status.
package pods

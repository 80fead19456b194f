// Package workload holds the controllers that keep pods running for the
// workload kinds: ReplicaSet and ReplicationController keep a number of pods
// matching a selector; Deployment rolls a template out through ReplicaSets.
package workload

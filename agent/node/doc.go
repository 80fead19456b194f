// Package node is the agent's Node: it registers it with its capacity,
// labels and taints, holds it against another agent of the same name,
// renews its Lease (the heartbeat) and writes its status and conditions,
// as the kubelet's node status manager does. It also reads what the
// machine has and uses (capacity, eviction signals, CPU and memory).
package node

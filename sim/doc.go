// Package sim is `berth sim` (SPEC §9): a control plane in this process
// and N hollow agents that talk to it over its real HTTPS API on loopback,
// through the real client and one shared connection pool. A hollow agent
// joins with the node token, registers its Node, renews its heartbeat and
// reports every pod bound to it Running, without starting any process.
//
// The run then creates K ReplicaSets whose replicas add up to M, straight
// in the store; the control plane's ReplicaSet controller creates the
// pods and its scheduler binds them. A store watch records when each pod
// is first seen (created), bound and reported Running.
// Time starts when the first pod is created and ends when the last pod is
// bound.
package sim

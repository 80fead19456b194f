// Package sim is `berth sim` (SPEC §9): a control plane in this process
// and N hollow agents that talk to it over its real HTTPS API on loopback,
// through shared connection pools. A hollow agent joins with the node
// token, registers its Node, renews its Lease every 10s (its heartbeat)
// and writes the Node's status every 5 minutes, as the agent does, reports
// every pod bound to it Running and finishes the deletion of its pods, without starting
// any process; each agent is one goroutine reading its own pod watch, and
// one goroutine per group of agents paces their heartbeats.
//
// The agents are a Fleet (StartFleet), which runs against any berth
// server: `berth sim agents` runs one on its own, and `berth sim --agents
// process` runs the run's fleet in such a child process, which answers
// the run's questions about its CPU time and peak RSS over its stdin and
// stdout (ServeFleet), so that the result tells the control plane's share
// from the agents'.
//
// The pods scenario then creates K ReplicaSets whose replicas add up to M,
// straight in the store; the control plane's ReplicaSet controller creates
// the pods and its scheduler binds them. A store watch records when each
// pod is first seen (created), bound and reported Running. Time starts
// when the first pod is created and ends when the last pod is bound. The
// rollout scenario rolls a Deployment to a new image and follows its
// availability at every revision.
package sim

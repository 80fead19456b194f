// Package node holds the node lifecycle controller: it marks nodes whose
// agent stopped heartbeating Unknown, taints them, and evicts their pods so
// that their controllers recreate them elsewhere. It also evicts, as
// Kubernetes' taint manager does, the pods that do not tolerate a
// NoExecute taint an operator puts on a node (kubectl taint), at once or
// after their toleration's tolerationSeconds. And it gives a cordoned node
// (spec.unschedulable) and one under memory, disk or PID pressure their
// NoSchedule taints, as Kubernetes' TaintNodesByCondition does.
package node

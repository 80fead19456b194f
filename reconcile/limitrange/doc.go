// Package limitrange applies LimitRanges for every writer through a store
// hook, as Kubernetes' LimitRanger admission plugin does: the default
// requests and limits of a namespace's containers, and the bounds of its
// containers, pods and claims.
package limitrange

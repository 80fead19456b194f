// Package priority resolves pod priorities for every writer through a
// store hook, as Kubernetes' Priority admission plugin does, and keeps at
// most one PriorityClass the global default.
package priority

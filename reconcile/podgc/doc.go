// Package podgc holds the pod garbage collector: it keeps the number of
// finished pods under a threshold and deletes the pods of nodes that no
// longer exist, as kube-controller-manager's podgc does.
package podgc

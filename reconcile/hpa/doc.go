// Package hpa is the HorizontalPodAutoscaler controller: Kubernetes'
// algorithm (replica_calculator.go and horizontal.go of
// kube-controller-manager) over the resource metrics the agents sample,
// the same numbers metrics.k8s.io serves to kubectl top.
package hpa

// Package clusterroleaggregation fills the rules of each ClusterRole with
// an aggregationRule with the union of the rules of the ClusterRoles its
// selectors pick, as Kubernetes' clusterrole-aggregation controller does:
// so admin, edit and view grow with every role labelled aggregate-to-*.
package clusterroleaggregation

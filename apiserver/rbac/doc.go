// Package rbac holds berth's RBAC authorizer: the rules of Roles and
// ClusterRoles granted by RoleBindings and ClusterRoleBindings, matched
// with Kubernetes' semantics, indexed by subject so that a check costs a
// few map lookups, the escalation check on role and binding writes, and
// the default roles the control plane bootstraps.
package rbac

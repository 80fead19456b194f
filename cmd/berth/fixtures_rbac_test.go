package main

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// fixtureRBAC are a Role, ClusterRoles (one aggregated) and bindings of
// every kind of subject.
func fixtureRBAC() (roles, clusterRoles, bindings, clusterBindings []api.Object) {
	writer := &api.Role{ObjectMeta: meta("shop", "configmap-writer", 2*time.Hour, nil), Rules: []api.PolicyRule{
		{Verbs: []string{"get", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"app-config"}},
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"", "apps"}, Resources: []string{"pods", "deployments/scale"}},
	}}
	view := &api.ClusterRole{ObjectMeta: meta("", "view", 3*day, nil),
		AggregationRule: &api.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}}}},
		Rules:           []api.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}}}}
	health := &api.ClusterRole{ObjectMeta: meta("", "system:public-info-viewer", 3*day, nil),
		Rules: []api.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/version"}}}}
	operator := &api.RoleBinding{ObjectMeta: meta("shop", "operator", 2*time.Hour, nil),
		RoleRef: api.RoleRef{APIGroup: api.RBACGroup, Kind: api.RoleRefRole, Name: "configmap-writer"},
		Subjects: []api.Subject{{Kind: api.SubjectServiceAccount, Name: "operator", Namespace: "shop"},
			{Kind: api.SubjectUser, APIGroup: api.RBACGroup, Name: "jane"}, {Kind: api.SubjectGroup, APIGroup: api.RBACGroup, Name: "devs"}}}
	viewers := &api.ClusterRoleBinding{ObjectMeta: meta("", "viewers", 5*time.Minute, nil),
		RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.RoleRefClusterRole, Name: "view"},
		Subjects: []api.Subject{{Kind: api.SubjectGroup, APIGroup: api.RBACGroup, Name: "auditors"}}}
	return []api.Object{writer}, []api.Object{health, view}, []api.Object{operator}, []api.Object{viewers}
}

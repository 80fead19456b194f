package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RBAC names, as Kubernetes spells them.
const (
	// RBACGroup is the API group of the RBAC kinds, and the apiGroup of
	// a roleRef and of a User or Group subject.
	RBACGroup = "rbac.authorization.k8s.io"
	// SubjectServiceAccount, SubjectUser and SubjectGroup are the kinds of
	// subject a binding names.
	SubjectServiceAccount = "ServiceAccount"
	SubjectUser           = "User"
	SubjectGroup          = "Group"
	// RoleRefRole and RoleRefClusterRole are the kinds a roleRef names.
	RoleRefRole        = "Role"
	RoleRefClusterRole = "ClusterRole"
	// AnnotationRBACAutoupdate marks the default roles and bindings the
	// control plane puts back as they were at every start; "false" leaves
	// a changed one alone, as in Kubernetes.
	AnnotationRBACAutoupdate = "rbac.authorization.kubernetes.io/autoupdate"
	// LabelBootstrapping marks the default roles and bindings.
	LabelBootstrapping = "kubernetes.io/bootstrapping"
)

// PolicyRule grants verbs on resources, or on paths outside the API. Its
// field order is rbac/v1's, so that it converts to k8s.io/api's type.
type PolicyRule struct {
	// Verbs are the verbs the rule grants ("get", "list", "create", …,
	// "escalate", "bind", "impersonate"); "*" grants every verb.
	// +listType=atomic
	Verbs []string `json:"verbs"`
	// APIGroups are the groups of the resources ("" is the core group);
	// "*" is every group.
	// +listType=atomic
	APIGroups []string `json:"apiGroups,omitempty"`
	// Resources are the resources, "pods/log" for a subresource, "*/scale"
	// for one subresource of every resource, "*" for all.
	// +listType=atomic
	Resources []string `json:"resources,omitempty"`
	// ResourceNames, when set, limit the rule to objects of these names.
	// A list or a create, which name no object, is not limited by it.
	// +listType=atomic
	ResourceNames []string `json:"resourceNames,omitempty"`
	// NonResourceURLs are paths outside the API ("/healthz", "/api/*");
	// only in a ClusterRole, and then without apiGroups or resources.
	// +listType=atomic
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// +kubebuilder:object:root=true

// Role is an rbac.authorization.k8s.io/v1 Role: rules that grant, in its
// namespace, what its RoleBindings' subjects may do.
type Role struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Rules are what the role grants.
	// +listType=atomic
	Rules []PolicyRule `json:"rules"`
}

// AggregationRule makes a ClusterRole the union of the rules of the
// ClusterRoles its selectors pick; the aggregation controller writes the
// union into the role's rules.
type AggregationRule struct {
	// ClusterRoleSelectors pick the ClusterRoles whose rules are
	// aggregated: a role matching any selector counts.
	// +listType=atomic
	ClusterRoleSelectors []metav1.LabelSelector `json:"clusterRoleSelectors,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterRole is an rbac.authorization.k8s.io/v1 ClusterRole: rules that
// a ClusterRoleBinding grants everywhere, or a RoleBinding in its own
// namespace.
type ClusterRole struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Rules are what the role grants. With an aggregationRule, the
	// controller owns them.
	// +listType=atomic
	Rules []PolicyRule `json:"rules"`
	// AggregationRule, when set, makes the rules the union of other
	// ClusterRoles' rules.
	AggregationRule *AggregationRule `json:"aggregationRule,omitempty"`
}

// Subject is who a binding grants its role to: a User, a Group or a
// ServiceAccount. Its field order is rbac/v1's.
type Subject struct {
	// Kind is User, Group or ServiceAccount.
	Kind string `json:"kind"`
	// APIGroup is "" for a ServiceAccount and rbac.authorization.k8s.io
	// for a User or a Group (the default).
	APIGroup string `json:"apiGroup,omitempty"`
	// Name is the user's, group's or service account's name.
	Name string `json:"name"`
	// Namespace is the service account's namespace; in a RoleBinding, the
	// binding's own when left out.
	Namespace string `json:"namespace,omitempty"`
}

// RoleRef names the role a binding grants; it cannot change.
type RoleRef struct {
	// APIGroup is rbac.authorization.k8s.io.
	APIGroup string `json:"apiGroup"`
	// Kind is Role (a RoleBinding only) or ClusterRole.
	Kind string `json:"kind"`
	// Name is the role's name.
	Name string `json:"name"`
}

// +kubebuilder:object:root=true

// RoleBinding is an rbac.authorization.k8s.io/v1 RoleBinding: it grants
// a Role, or a ClusterRole's rules, to subjects in its namespace.
type RoleBinding struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Subjects are who the binding grants the role to.
	// +listType=atomic
	Subjects []Subject `json:"subjects,omitempty"`
	// RoleRef is the role granted.
	RoleRef RoleRef `json:"roleRef"`
}

// +kubebuilder:object:root=true

// ClusterRoleBinding is an rbac.authorization.k8s.io/v1
// ClusterRoleBinding: it grants a ClusterRole to subjects in every
// namespace and at the cluster scope.
type ClusterRoleBinding struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Subjects are who the binding grants the role to.
	// +listType=atomic
	Subjects []Subject `json:"subjects,omitempty"`
	// RoleRef is the ClusterRole granted.
	RoleRef RoleRef `json:"roleRef"`
}

// defaultSubjects gives User and Group subjects, and a roleRef, the RBAC
// group when they leave it out, as Kubernetes' v1 defaults do.
func defaultSubjects(subjects []Subject, ref *RoleRef) {
	for i := range subjects {
		if s := &subjects[i]; s.APIGroup == "" && (s.Kind == SubjectUser || s.Kind == SubjectGroup) {
			s.APIGroup = RBACGroup
		}
	}
	if ref.APIGroup == "" {
		ref.APIGroup = RBACGroup
	}
}

package rbac

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/component-helpers/auth/rbac/reconciliation"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Aggregation labels of the default roles, as Kubernetes names them.
const (
	LabelAggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	LabelAggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	LabelAggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = append(append([]string{}, read...), write...)
)

func rule(verbs []string, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

func pathRule(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: paths}
}

// DefaultClusterRoles are the ClusterRoles Kubernetes bootstraps that
// berth has a use for: cluster-admin, the aggregated admin, edit and view
// and the roles aggregated into them, and the rights every user has.
// Their rules follow Kubernetes' bootstrap policy, the kinds berth does
// not serve included, so that a role reads the same on both.
func DefaultClusterRoles() []*api.ClusterRole {
	agg := func(label string) *api.AggregationRule {
		return &api.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
	}
	roles := []*api.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: FromRules(fullAuthority)},
		{ObjectMeta: metav1.ObjectMeta{Name: "system:discovery"}, Rules: FromRules([]rbacv1.PolicyRule{
			pathRule([]string{"get"}, "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"),
		})},
		{ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user"}, Rules: FromRules([]rbacv1.PolicyRule{
			rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, "authentication.k8s.io", "selfsubjectreviews"),
		})},
		{ObjectMeta: metav1.ObjectMeta{Name: "system:public-info-viewer"}, Rules: FromRules([]rbacv1.PolicyRule{
			pathRule([]string{"get"}, "/healthz", "/livez", "/readyz", "/version", "/version/"),
		})},
		{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, AggregationRule: agg(LabelAggregateToAdmin)},
		{ObjectMeta: metav1.ObjectMeta{Name: "edit", Labels: map[string]string{LabelAggregateToAdmin: "true"}}, AggregationRule: agg(LabelAggregateToEdit)},
		{ObjectMeta: metav1.ObjectMeta{Name: "view", Labels: map[string]string{LabelAggregateToEdit: "true"}}, AggregationRule: agg(LabelAggregateToView)},
		{ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-admin", Labels: map[string]string{LabelAggregateToAdmin: "true"}}, Rules: FromRules([]rbacv1.PolicyRule{
			rule([]string{"create"}, "authorization.k8s.io", "localsubjectaccessreviews"),
			rule(readWrite, api.RBACGroup, "rolebindings", "roles"),
		})},
		{ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-edit", Labels: map[string]string{LabelAggregateToEdit: "true"}}, Rules: FromRules([]rbacv1.PolicyRule{
			rule(read, "", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
			rule([]string{"impersonate"}, "", "serviceaccounts"),
			rule(write, "", "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
			rule([]string{"create"}, "", "pods/eviction"),
			rule(write, "", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/proxy",
				"persistentvolumeclaims", "configmaps", "secrets", "events"),
			rule([]string{"create"}, "", "serviceaccounts/token"),
			rule(write, "apps", "statefulsets", "statefulsets/scale", "daemonsets", "deployments", "deployments/scale", "deployments/rollback",
				"replicasets", "replicasets/scale"),
			rule(write, "autoscaling", "horizontalpodautoscalers"),
			rule(write, "batch", "jobs", "cronjobs"),
			rule(write, "extensions", "daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
				"replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
			rule(write, "policy", "poddisruptionbudgets"),
			rule(write, "networking.k8s.io", "networkpolicies", "ingresses"),
			rule(readWrite, "coordination.k8s.io", "leases"),
		})},
		{ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-view", Labels: map[string]string{LabelAggregateToView: "true"}}, Rules: FromRules([]rbacv1.PolicyRule{
			rule(read, "", "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status",
				"endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
			rule(read, "", "limitranges", "resourcequotas", "bindings", "events", "pods/status", "resourcequotas/status", "namespaces/status",
				"replicationcontrollers/status", "pods/log"),
			rule(read, "", "namespaces"),
			rule(read, "discovery.k8s.io", "endpointslices"),
			rule(read, "apps", "controllerrevisions", "statefulsets", "statefulsets/scale", "statefulsets/status", "daemonsets", "daemonsets/status",
				"deployments", "deployments/scale", "deployments/status", "replicasets", "replicasets/scale", "replicasets/status"),
			rule(read, "autoscaling", "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
			rule(read, "batch", "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
			rule(read, "extensions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
				"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale", "networkpolicies"),
			rule(read, "policy", "poddisruptionbudgets", "poddisruptionbudgets/status"),
			rule(read, "networking.k8s.io", "networkpolicies", "ingresses", "ingresses/status"),
		})},
		// berth serves the resource metrics itself; metrics-server adds
		// this role, aggregated into view, where Kubernetes has it.
		{ObjectMeta: metav1.ObjectMeta{Name: "system:aggregated-metrics-reader", Labels: map[string]string{
			LabelAggregateToView: "true", LabelAggregateToEdit: "true", LabelAggregateToAdmin: "true"}}, Rules: FromRules([]rbacv1.PolicyRule{
			rule(read, "metrics.k8s.io", "pods", "nodes"),
		})},
	}
	for _, r := range roles {
		bootstrapMeta(&r.ObjectMeta)
	}
	return roles
}

// DefaultClusterRoleBindings grant the default roles as Kubernetes does:
// cluster-admin to system:masters, discovery, the self reviews and the
// public information to every authenticated user.
func DefaultClusterRoleBindings() []*api.ClusterRoleBinding {
	group := func(name string) api.Subject {
		return api.Subject{Kind: api.SubjectGroup, APIGroup: api.RBACGroup, Name: name}
	}
	bind := func(role string, subjects ...api.Subject) *api.ClusterRoleBinding {
		b := &api.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.RoleRefClusterRole, Name: role},
			Subjects: subjects}
		bootstrapMeta(&b.ObjectMeta)
		return b
	}
	return []*api.ClusterRoleBinding{
		bind("cluster-admin", group(user.SystemPrivilegedGroup)),
		bind("system:discovery", group(user.AllAuthenticated)),
		bind("system:basic-user", group(user.AllAuthenticated)),
		bind("system:public-info-viewer", group(user.AllAuthenticated), group(user.AllUnauthenticated)),
	}
}

func bootstrapMeta(m *metav1.ObjectMeta) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[api.LabelBootstrapping] = "rbac-defaults"
	m.Annotations = map[string]string{api.AnnotationRBACAutoupdate: "true"}
}

// Bootstrap puts the default roles and bindings in the store as
// kube-apiserver does at every start, with component-helpers'
// reconciliation: a missing one is created, one that lacks a default rule
// or subject gets it back, and one annotated autoupdate=false is left as
// it is. What a user added stays.
func Bootstrap(ctx context.Context, st *store.Store) error {
	for _, r := range DefaultClusterRoles() {
		opts := reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: toV1ClusterRole(r)},
			Client:  clusterRoleStore{ctx: ctx, st: st},
			Confirm: true,
		}
		if _, err := opts.Run(); err != nil {
			return fmt.Errorf("bootstrap clusterrole %s: %w", r.Name, err)
		}
	}
	for _, b := range DefaultClusterRoleBindings() {
		opts := reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: toV1ClusterRoleBinding(b)},
			Client:      clusterRoleBindingStore{ctx: ctx, st: st},
			Confirm:     true,
		}
		if _, err := opts.Run(); err != nil {
			return fmt.Errorf("bootstrap clusterrolebinding %s: %w", b.Name, err)
		}
	}
	return nil
}

func toV1ClusterRole(r *api.ClusterRole) *rbacv1.ClusterRole {
	out := &rbacv1.ClusterRole{ObjectMeta: *r.ObjectMeta.DeepCopy(), Rules: Rules(r.Rules)}
	if r.AggregationRule != nil {
		out.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: r.AggregationRule.DeepCopy().ClusterRoleSelectors}
	}
	return out
}

func fromV1ClusterRole(r *rbacv1.ClusterRole) *api.ClusterRole {
	out := &api.ClusterRole{ObjectMeta: *r.ObjectMeta.DeepCopy(), Rules: FromRules(r.Rules)}
	out.SetGroupVersionKind(ClusterRoleKind.GVK)
	if r.AggregationRule != nil {
		out.AggregationRule = &api.AggregationRule{ClusterRoleSelectors: r.AggregationRule.DeepCopy().ClusterRoleSelectors}
	}
	return out
}

func toV1ClusterRoleBinding(b *api.ClusterRoleBinding) *rbacv1.ClusterRoleBinding {
	out := &rbacv1.ClusterRoleBinding{ObjectMeta: *b.ObjectMeta.DeepCopy(), RoleRef: rbacv1.RoleRef(b.RoleRef)}
	for _, s := range b.Subjects {
		out.Subjects = append(out.Subjects, rbacv1.Subject(s))
	}
	return out
}

func fromV1ClusterRoleBinding(b *rbacv1.ClusterRoleBinding) *api.ClusterRoleBinding {
	out := &api.ClusterRoleBinding{ObjectMeta: *b.ObjectMeta.DeepCopy(), RoleRef: api.RoleRef(b.RoleRef)}
	out.SetGroupVersionKind(ClusterRoleBindingKind.GVK)
	for _, s := range b.Subjects {
		out.Subjects = append(out.Subjects, api.Subject(s))
	}
	return out
}

// storeError gives reconciliation the apimachinery errors it tells apart.
func storeError(err error, resource, name string) error {
	gr := schema.GroupResource{Group: api.RBACGroup, Resource: resource}
	switch {
	case store.IsNotFound(err):
		return apierrors.NewNotFound(gr, name)
	case store.IsAlreadyExists(err):
		return apierrors.NewAlreadyExists(gr, name)
	}
	return err
}

// clusterRoleStore is reconciliation's client of ClusterRoles, over the
// store.
type clusterRoleStore struct {
	ctx context.Context
	st  *store.Store
}

func (c clusterRoleStore) Get(_, name string) (reconciliation.RuleOwner, error) {
	o, err := c.st.Get(ClusterRoleKind, "", name)
	if err != nil {
		return nil, storeError(err, "clusterroles", name)
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: toV1ClusterRole(o.(*api.ClusterRole))}, nil
}

func (c clusterRoleStore) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return c.write(in, c.st.Create)
}

func (c clusterRoleStore) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return c.write(in, c.st.Update)
}

func (c clusterRoleStore) write(in reconciliation.RuleOwner, fn func(context.Context, api.Object) (api.Object, error)) (reconciliation.RuleOwner, error) {
	r := fromV1ClusterRole(in.(reconciliation.ClusterRoleRuleOwner).ClusterRole)
	api.Default(r)
	o, err := fn(c.ctx, r)
	if err != nil {
		return nil, storeError(err, "clusterroles", r.Name)
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: toV1ClusterRole(o.(*api.ClusterRole))}, nil
}

// clusterRoleBindingStore is reconciliation's client of
// ClusterRoleBindings, over the store.
type clusterRoleBindingStore struct {
	ctx context.Context
	st  *store.Store
}

func (c clusterRoleBindingStore) Get(_, name string) (reconciliation.RoleBinding, error) {
	o, err := c.st.Get(ClusterRoleBindingKind, "", name)
	if err != nil {
		return nil, storeError(err, "clusterrolebindings", name)
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: toV1ClusterRoleBinding(o.(*api.ClusterRoleBinding))}, nil
}

func (c clusterRoleBindingStore) Delete(_, name string, uid types.UID) error {
	_, err := c.st.Delete(c.ctx, ClusterRoleBindingKind, "", name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(uid)}})
	return storeError(err, "clusterrolebindings", name)
}

func (c clusterRoleBindingStore) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return c.write(in, c.st.Create)
}

func (c clusterRoleBindingStore) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return c.write(in, c.st.Update)
}

func (c clusterRoleBindingStore) write(in reconciliation.RoleBinding, fn func(context.Context, api.Object) (api.Object, error)) (reconciliation.RoleBinding, error) {
	b := fromV1ClusterRoleBinding(in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding)
	api.Default(b)
	o, err := fn(c.ctx, b)
	if err != nil {
		return nil, storeError(err, "clusterrolebindings", b.Name)
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: toV1ClusterRoleBinding(o.(*api.ClusterRoleBinding))}, nil
}

package apiserver_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/rbac"
	"github.com/berth-dev/berth/reconcile/clusterroleaggregation"
	"github.com/berth-dev/berth/store"
)

// grantView gives a service account Kubernetes' view role in its
// namespace, as a cluster would need to let it read there: the default
// roles, aggregated as the controller does, and a RoleBinding.
func grantView(t testing.TB, st *store.Store, namespace, sa string) {
	t.Helper()
	ctx := context.Background()
	if err := rbac.Bootstrap(ctx, st); err != nil {
		t.Fatal(err)
	}
	r := clusterroleaggregation.NewReconciler(st)
	for _, role := range []string{"view", "edit", "admin"} {
		if _, err := r.Reconcile(ctx, role); err != nil {
			t.Fatal(err)
		}
	}
	b := &api.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sa + "-view"},
		RoleRef:    api.RoleRef{APIGroup: api.RBACGroup, Kind: api.RoleRefClusterRole, Name: "view"},
		Subjects:   []api.Subject{{Kind: api.SubjectServiceAccount, Name: sa, Namespace: namespace}},
	}
	api.Default(b)
	if _, err := st.Create(ctx, b); err != nil && !store.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

package api

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestValidateRBAC: the RBAC kinds are refused with Kubernetes' messages,
// each at its field.
func TestValidateRBAC(t *testing.T) {
	rb := &RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "b"},
		Subjects: []Subject{{Kind: "Robot", Name: "x"}, {Kind: SubjectServiceAccount, Name: "Bad_Name", APIGroup: RBACGroup}, {Kind: SubjectUser}},
		RoleRef:  RoleRef{APIGroup: "example.com", Kind: "Secret"}}
	crb := &ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Subjects: []Subject{{Kind: SubjectServiceAccount, Name: "sa"}}, RoleRef: RoleRef{Kind: RoleRefRole, Name: "r"}}
	cr := &ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:x"}, AggregationRule: &AggregationRule{}}
	r := &Role{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "r"}, Rules: []PolicyRule{
		{NonResourceURLs: []string{"/x"}, Resources: []string{"pods"}}, {Verbs: []string{"get"}}}}
	for _, c := range []struct {
		obj  Object
		want []string
	}{
		{r, []string{
			"rules[0].verbs: Required value: verbs must contain at least one value",
			`rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`,
			`rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`,
			"rules[1].apiGroups: Required value: resource rules must supply at least one api group",
			"rules[1].resources: Required value: resource rules must supply at least one resource",
		}},
		{cr, []string{"aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"}},
		{rb, []string{
			`roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`,
			`roleRef.kind: Unsupported value: "Secret": supported values: "Role", "ClusterRole"`,
			"roleRef.name: Required value",
			`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`,
			`subjects[1].name: Invalid value: "Bad_Name"`,
			`subjects[1].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""`,
			"subjects[2].name: Required value",
		}},
		{crb, []string{
			`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`,
			"subjects[0].namespace: Required value",
		}},
	} {
		Default(c.obj)
		got := Validate(c.obj).ToAggregate()
		if got == nil {
			t.Errorf("%s: valid", c.obj.GetName())
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got.Error(), w) {
				t.Errorf("%s: %v\nwant %q", c.obj.GetName(), got, w)
			}
		}
	}
	// A roleRef cannot change.
	old := &RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "b"}, RoleRef: RoleRef{APIGroup: RBACGroup, Kind: RoleRefRole, Name: "a"}}
	next := old.DeepCopy()
	next.RoleRef.Name = "b"
	if errs := ValidateUpdate(old, next); len(errs) != 1 || !strings.Contains(errs[0].Error(), "roleRef: Invalid value") || !strings.Contains(errs[0].Error(), "cannot change roleRef") {
		t.Errorf("roleRef change: %v", errs)
	}
	// A User subject gets the RBAC group by default, as in Kubernetes.
	b := &RoleBinding{Subjects: []Subject{{Kind: SubjectUser, Name: "jane"}}}
	Default(b)
	if b.Subjects[0].APIGroup != RBACGroup || b.RoleRef.APIGroup != RBACGroup {
		t.Errorf("defaults: %+v", b)
	}
}

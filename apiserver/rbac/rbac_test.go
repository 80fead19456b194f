package rbac_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/rbac"
	"github.com/berth-dev/berth/reconcile/clusterroleaggregation"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

// newStore is a memory store holding the namespaces the tests use.
func newStore(t testing.TB) *store.Store {
	t.Helper()
	st := storetest.NewMemory(t)
	for _, ns := range []string{"default", "ns1", "ns2"} {
		create(t, st, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	return st
}

func create(t testing.TB, st *store.Store, obj api.Object) {
	t.Helper()
	api.Default(obj)
	if errs := api.Validate(obj); len(errs) > 0 {
		t.Fatalf("%s: %v", obj.GetName(), errs.ToAggregate())
	}
	if _, err := st.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func role(ns, name string, rules ...api.PolicyRule) *api.Role {
	return &api.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func clusterRole(name string, rules ...api.PolicyRule) *api.ClusterRole {
	return &api.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func binding(ns, name, kind, roleName string, subjects ...api.Subject) *api.RoleBinding {
	return &api.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef: api.RoleRef{Kind: kind, Name: roleName}, Subjects: subjects}
}

func clusterBinding(name, roleName string, subjects ...api.Subject) *api.ClusterRoleBinding {
	return &api.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: api.RoleRef{Kind: api.RoleRefClusterRole, Name: roleName}, Subjects: subjects}
}

func userSubject(name string) api.Subject  { return api.Subject{Kind: api.SubjectUser, Name: name} }
func groupSubject(name string) api.Subject { return api.Subject{Kind: api.SubjectGroup, Name: name} }

func pr(verbs, groups, resources string) api.PolicyRule {
	r := api.PolicyRule{Verbs: strings.Split(verbs, ",")}
	r.APIGroups = strings.Split(groups, ",")
	r.Resources = strings.Split(resources, ",")
	return r
}

func res(u user.Info, verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub,
		Namespace: ns, Name: name, ResourceRequest: true}
}

func path(u user.Info, verb, p string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Path: p}
}

// TestAuthorize is the table of Kubernetes' RBAC authorizer cases: verbs,
// resources, subresources, resourceNames, non-resource URLs, wildcards,
// the scopes of RoleBindings and ClusterRoleBindings, the three kinds of
// subject, a missing role, and aggregation.
func TestAuthorize(t *testing.T) {
	st := newStore(t)
	withNames := pr("get,update", "", "configmaps")
	withNames.ResourceNames = []string{"app-config"}
	for _, obj := range []api.Object{
		role("ns1", "pod-reader", pr("get,list,watch", "", "pods")),
		role("ns1", "log-reader", pr("get", "", "pods/log")),
		role("ns1", "cm-named", withNames),
		clusterRole("deploy-admin", pr("*", "apps", "deployments,deployments/scale")),
		clusterRole("status-reader", pr("get", "*", "*/status")),
		clusterRole("everything", pr("*", "*", "*")),
		clusterRole("health", api.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/logs/*"}}),
		clusterRole("any-path", api.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}),
		clusterRole("secret-lister", pr("list", "", "secrets")),
		binding("ns1", "alice-pods", api.RoleRefRole, "pod-reader", userSubject("alice")),
		binding("ns1", "alice-logs", api.RoleRefRole, "log-reader", userSubject("alice")),
		binding("ns1", "alice-cm", api.RoleRefRole, "cm-named", userSubject("alice")),
		binding("ns1", "devs-deploy", api.RoleRefClusterRole, "deploy-admin", groupSubject("devs")),
		binding("ns1", "robot-secrets", api.RoleRefClusterRole, "secret-lister", api.Subject{Kind: api.SubjectServiceAccount, Name: "robot"}),
		binding("ns2", "ghost", api.RoleRefRole, "no-such-role", userSubject("alice")),
		clusterBinding("ops-status", "status-reader", groupSubject("ops")),
		clusterBinding("root", "everything", userSubject("root")),
		clusterBinding("health", "health", groupSubject("system:authenticated")),
		clusterBinding("root-paths", "any-path", userSubject("root")),
	} {
		create(t, st, obj)
	}
	a := rbac.New(st)
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	dev := &user.DefaultInfo{Name: "dev1", Groups: []string{"devs", "system:authenticated"}}
	ops := &user.DefaultInfo{Name: "op", Groups: []string{"ops", "system:authenticated"}}
	root := &user.DefaultInfo{Name: "root"}
	robot := &user.DefaultInfo{Name: "system:serviceaccount:ns1:robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1"}}
	otherRobot := &user.DefaultInfo{Name: "system:serviceaccount:ns2:robot"}
	for _, c := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"a role's verb", res(alice, "get", "", "pods", "", "ns1", "web"), true},
		{"list", res(alice, "list", "", "pods", "", "ns1", ""), true},
		{"a verb the role lacks", res(alice, "delete", "", "pods", "", "ns1", "web"), false},
		{"a role binds in its namespace only", res(alice, "get", "", "pods", "", "ns2", "web"), false},
		{"nor at the cluster scope", res(alice, "list", "", "pods", "", "", ""), false},
		{"another group", res(alice, "get", "apps", "pods", "", "ns1", "web"), false},
		{"a subresource needs its own rule", res(alice, "get", "", "pods", "exec", "ns1", "web"), false},
		{"pods/log", res(alice, "get", "", "pods", "log", "ns1", "web"), true},
		{"pods/log grants not pods", res(&user.DefaultInfo{Name: "alice"}, "get", "", "configmaps", "log", "ns1", "x"), false},
		{"a resource name", res(alice, "get", "", "configmaps", "", "ns1", "app-config"), true},
		{"another name", res(alice, "get", "", "configmaps", "", "ns1", "other"), false},
		{"names do not list", res(alice, "list", "", "configmaps", "", "ns1", ""), false},
		{"names do not create", res(alice, "create", "", "configmaps", "", "ns1", ""), false},
		{"a ClusterRole in a RoleBinding: that namespace", res(dev, "delete", "apps", "deployments", "", "ns1", "web"), true},
		{"its subresource", res(dev, "update", "apps", "deployments", "scale", "ns1", "web"), true},
		{"not elsewhere", res(dev, "delete", "apps", "deployments", "", "ns2", "web"), false},
		{"* verb, not another group", res(dev, "get", "extensions", "deployments", "", "ns1", "web"), false},
		{"*/status", res(ops, "get", "apps", "deployments", "status", "ns2", "web"), true},
		{"*/status is not the object", res(ops, "get", "apps", "deployments", "", "ns2", "web"), false},
		{"*/status is not another subresource", res(ops, "get", "", "pods", "log", "ns2", "web"), false},
		{"everything", res(root, "escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "x"), true},
		{"everything at the cluster scope", res(root, "delete", "", "nodes", "", "", "n1"), true},
		{"a path", path(alice, "get", "/healthz"), true},
		{"a path's verb", path(alice, "post", "/healthz"), false},
		{"a prefix", path(alice, "get", "/logs/kubelet.log"), true},
		{"not a prefix", path(alice, "get", "/logsx"), false},
		{"resource rules open no path", path(dev, "get", "/apis/apps"), false},
		{"* paths", path(root, "post", "/anything/at/all"), true},
		{"a * path rule opens every path", path(&user.DefaultInfo{Name: "root"}, "get", "/metrics"), true},
		{"a service account in the binding's namespace", res(robot, "list", "", "secrets", "", "ns1", ""), true},
		{"not the same name in another namespace", res(otherRobot, "list", "", "secrets", "", "ns1", ""), false},
		{"a binding of a missing role grants nothing", res(alice, "get", "", "pods", "", "ns2", "web"), false},
		{"no user", authorizer.AttributesRecord{Verb: "get", Resource: "pods", ResourceRequest: true}, false},
	} {
		d, _, err := a.Authorize(context.Background(), c.attrs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := d == authorizer.DecisionAllow; got != c.allow {
			t.Errorf("%s: allowed %v, want %v", c.name, got, c.allow)
		}
	}
	ix, err := a.Index()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ix.Missing(), "no-such-role") {
		t.Errorf("missing roles: %q", ix.Missing())
	}
	// A new binding counts at once: the index follows the store.
	create(t, st, binding("ns2", "alice-pods", api.RoleRefClusterRole, "everything", userSubject("alice")))
	if d, _, _ := a.Authorize(context.Background(), res(alice, "delete", "", "pods", "", "ns2", "web")); d != authorizer.DecisionAllow {
		t.Error("a binding made after the first check is not seen")
	}
}

// TestAggregation: admin, edit and view gather the roles labelled for
// them, view inside edit inside admin, and a new labelled role joins.
func TestAggregation(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	if err := rbac.Bootstrap(ctx, st); err != nil {
		t.Fatal(err)
	}
	aggregate := func() {
		r := clusterroleaggregation.NewReconciler(st)
		for _, n := range []string{"view", "edit", "admin"} {
			if _, err := r.Reconcile(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	aggregate()
	widget := clusterRole("widget-viewer", pr("get,list", "example.com", "widgets"))
	widget.Labels = map[string]string{rbac.LabelAggregateToView: "true"}
	create(t, st, widget)
	aggregate()
	for _, c := range []struct {
		role, verb, group, resource, sub string
		allow                            bool
	}{
		{"view", "get", "", "pods", "", true},
		{"view", "get", "", "pods", "log", true},
		{"view", "get", "", "secrets", "", false},
		{"view", "update", "", "configmaps", "", false},
		{"view", "list", "example.com", "widgets", "", true},
		{"edit", "update", "", "configmaps", "", true},
		{"edit", "get", "", "secrets", "", true},
		{"edit", "list", "example.com", "widgets", "", true},
		{"edit", "create", "rbac.authorization.k8s.io", "rolebindings", "", false},
		{"admin", "create", "rbac.authorization.k8s.io", "rolebindings", "", true},
		{"admin", "delete", "apps", "deployments", "", true},
		{"admin", "list", "example.com", "widgets", "", true},
		{"admin", "delete", "", "nodes", "", true}, // in the namespace: a RoleBinding's scope limits it
	} {
		u := &user.DefaultInfo{Name: "u-" + c.role}
		name := fmt.Sprintf("%s-%s-%s", c.role, c.verb, c.resource)
		st2 := st
		if _, err := st2.Get(rbac.RoleBindingKind, "ns1", "u-"+c.role); store.IsNotFound(err) {
			create(t, st2, binding("ns1", "u-"+c.role, api.RoleRefClusterRole, c.role, userSubject(u.Name)))
		}
		d, _, err := rbac.New(st).Authorize(ctx, res(u, c.verb, c.group, c.resource, c.sub, "ns1", ""))
		if err != nil {
			t.Fatal(err)
		}
		if c.resource == "nodes" {
			// admin has no rule for nodes.
			c.allow = false
		}
		if got := d == authorizer.DecisionAllow; got != c.allow {
			t.Errorf("%s: allowed %v, want %v", name, got, c.allow)
		}
	}
}

// TestEscalation: a user may grant only what it holds, unless it may
// escalate or bind; system:masters is not asked.
func TestEscalation(t *testing.T) {
	st := newStore(t)
	for _, obj := range []api.Object{
		role("ns1", "cm-writer", pr("get,update", "", "configmaps")),
		role("ns1", "rbac-writer", pr("create,update", "rbac.authorization.k8s.io", "roles,rolebindings")),
		clusterRole("secret-reader", pr("get", "", "secrets")),
		clusterRole("binder", api.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"secret-reader"}}),
		clusterRole("escalator", pr("escalate", "rbac.authorization.k8s.io", "roles")),
		binding("ns1", "lead-cm", api.RoleRefRole, "cm-writer", userSubject("lead")),
		binding("ns1", "lead-rbac", api.RoleRefRole, "rbac-writer", userSubject("lead")),
		binding("ns1", "binder", api.RoleRefClusterRole, "binder", userSubject("binder")),
		binding("ns1", "escalator", api.RoleRefClusterRole, "escalator", userSubject("escalator")),
	} {
		create(t, st, obj)
	}
	ix, err := rbac.New(st).Index()
	if err != nil {
		t.Fatal(err)
	}
	lead := &user.DefaultInfo{Name: "lead", Groups: []string{"system:authenticated"}}
	if err := ix.CheckWrite(lead, role("ns1", "sub", pr("get", "", "configmaps")), nil); err != nil {
		t.Errorf("a role within what the author holds: %v", err)
	}
	err = ix.CheckWrite(lead, role("ns1", "more", pr("get,delete", "", "configmaps"), pr("get", "", "secrets")), nil)
	want := `user "lead" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
		`{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}` + "\n" + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a role beyond the author's rules: %v, want %q", err, want)
	}
	if err := ix.CheckWrite(lead, role("ns2", "sub", pr("get", "", "configmaps")), nil); err == nil {
		t.Error("a role in a namespace where the author holds nothing passed")
	}
	if err := ix.CheckWrite(lead, binding("ns1", "b", api.RoleRefRole, "cm-writer", userSubject("x")), nil); err != nil {
		t.Errorf("binding a role the author holds: %v", err)
	}
	if err := ix.CheckWrite(lead, binding("ns1", "b", api.RoleRefClusterRole, "secret-reader", userSubject("x")), nil); err == nil {
		t.Error("binding a role the author does not hold passed")
	}
	binder := &user.DefaultInfo{Name: "binder"}
	if err := ix.CheckWrite(binder, binding("ns1", "b", api.RoleRefClusterRole, "secret-reader", userSubject("x")), nil); err != nil {
		t.Errorf("bind verb: %v", err)
	}
	if err := ix.CheckWrite(binder, binding("ns1", "b", api.RoleRefClusterRole, "binder", userSubject("x")), nil); err != nil {
		t.Errorf("binding what the binder holds: %v", err)
	}
	if err := ix.CheckWrite(binder, binding("ns1", "b", api.RoleRefRole, "cm-writer", userSubject("x")), nil); err == nil {
		t.Error("bind on one role opened another")
	}
	escalator := &user.DefaultInfo{Name: "escalator"}
	if err := ix.CheckWrite(escalator, role("ns1", "big", pr("*", "*", "*")), nil); err != nil {
		t.Errorf("escalate verb: %v", err)
	}
	agg := clusterRole("agg")
	agg.AggregationRule = &api.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}
	if err := ix.CheckWrite(lead, agg, nil); err == nil || !strings.Contains(err.Error(), "must have cluster-admin privileges to use the aggregationRule") {
		t.Errorf("aggregationRule: %v", err)
	}
	masters := &user.DefaultInfo{Name: "m", Groups: []string{user.SystemPrivilegedGroup}}
	if err := ix.CheckWrite(masters, agg, nil); err != nil {
		t.Errorf("system:masters: %v", err)
	}
	// An update that keeps the rules (a label) passes whoever holds them.
	old := role("ns1", "wide", pr("*", "*", "*"))
	next := role("ns1", "wide", pr("*", "*", "*"))
	next.Labels = map[string]string{"a": "b"}
	if err := ix.CheckWrite(lead, next, old); err != nil {
		t.Errorf("a label change: %v", err)
	}
}

// FuzzRuleAllows: the matcher never panics, and a rule of "*" everywhere
// allows every resource request.
func FuzzRuleAllows(f *testing.F) {
	f.Add("get", "", "pods", "log", "web", "get", "", "pods/log", "", "/healthz")
	f.Add("list", "apps", "deployments", "", "", "*", "*", "*/scale", "x", "/api/*")
	f.Add("get", "", "", "", "", "get", "", "", "", "*")
	f.Fuzz(func(t *testing.T, verb, group, resource, sub, name, rVerb, rGroup, rResource, rName, rURL string) {
		rule := rbacv1.PolicyRule{Verbs: []string{rVerb}, APIGroups: []string{rGroup}, Resources: []string{rResource}, NonResourceURLs: []string{rURL}}
		if rName != "" {
			rule.ResourceNames = []string{rName}
		}
		u := &user.DefaultInfo{Name: "u"}
		rbac.RuleAllows(res(u, verb, group, resource, sub, "ns", name), &rule)
		rbac.RuleAllows(path(u, verb, "/"+resource), &rule)
		all := rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
		if !rbac.RuleAllows(res(u, verb, group, resource, sub, "ns", name), &all) {
			t.Fatal("* did not allow")
		}
	})
}

// BenchmarkAuthorize: a check among 1,000 RoleBindings and 200 Roles
// spread over 50 namespaces, for a user bound in its namespace by three
// bindings, with five groups, asking for what its last rule grants.
func BenchmarkAuthorize(b *testing.B) {
	st, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for i := range 50 {
		create(b, st, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", i)}})
	}
	for i := range 200 {
		ns := fmt.Sprintf("ns%d", i%50)
		var rules []api.PolicyRule
		for j := range 10 {
			rules = append(rules, pr("get,list,watch", "", fmt.Sprintf("things%d", j)))
		}
		create(b, st, role(ns, fmt.Sprintf("role%d", i), rules...))
	}
	for i := range 1000 {
		ns := fmt.Sprintf("ns%d", i%50)
		create(b, st, binding(ns, fmt.Sprintf("b%d", i), api.RoleRefRole, fmt.Sprintf("role%d", (i%200)/50*50+i%50),
			userSubject(fmt.Sprintf("user%d", i%300)), groupSubject(fmt.Sprintf("team%d", i%40))))
	}
	a := rbac.New(st)
	u := &user.DefaultInfo{Name: "user7", Groups: []string{"team1", "team2", "team3", "system:authenticated", "system:basic"}}
	allowed := res(u, "watch", "", "things9", "", "ns7", "")
	denied := res(u, "delete", "", "things9", "", "ns7", "x")
	if d, _, _ := a.Authorize(context.Background(), allowed); d != authorizer.DecisionAllow {
		b.Fatal("not allowed")
	}
	b.ReportAllocs()
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		attrs := allowed
		if i%2 == 1 {
			attrs = denied
		}
		start := time.Now()
		_, _, _ = a.Authorize(context.Background(), attrs)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
}

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/testtool"
)

// TestRBACUsersAndServiceAccounts drives RBAC as a cluster's admin and
// users would: a user made with berth token create-user and bound to
// view in one namespace reads it and nothing else; a user of the token
// file likewise; a service account's token updates a ConfigMap once a
// Role lets it and is refused, naming the permission, before; a user
// cannot grant what it does not hold; kubectl auth can-i and reconcile
// answer as against Kubernetes.
func TestRBACUsersAndServiceAccounts(t *testing.T) {
	testtool.Need(t, "kubectl")
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("# token,user,uid,groups\nbob-secret-token,bob,1001,\"qa,auditors\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--token-auth-file", tokens)
	kc := func(args ...string) string { t.Helper(); return s.kubectl(t, args...) }
	refused := func(want string, args ...string) {
		t.Helper()
		out, err := s.kubectlErr(t, args...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("kubectl %s: %v, %q, want a refusal with %q", strings.Join(args, " "), err, out, want)
		}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		kc("create", "namespace", ns)
		kc("create", "configmap", "app", "-n", ns, "--from-literal=k=v")
	}

	// A user with a client certificate, bound to view in team-a.
	jane := filepath.Join(dir, "jane.kubeconfig")
	if _, stderr, code := run(t, "token", "create-user", "jane", "--group", "devs", "--ttl", "1h", "--data-dir", s.dataDir, "-o", jane); code != 0 {
		t.Fatalf("berth token create-user: %d %s", code, stderr)
	}
	asJane := func(args ...string) []string { return append([]string{"--kubeconfig", jane}, args...) }
	if out := kc(asJane("auth", "whoami")...); !strings.Contains(out, "jane") || !strings.Contains(out, "devs") {
		t.Errorf("whoami as jane: %s", out)
	}
	refused(`User "jane" cannot list resource "configmaps" in API group "" in the namespace "team-a"`, asJane("get", "configmaps", "-n", "team-a")...)
	kc("create", "rolebinding", "jane-view", "--clusterrole=view", "--user=jane", "-n", "team-a")
	waitFor(t, 30e9, "jane reads team-a", func() error {
		_, err := s.kubectlErr(t, asJane("get", "configmaps", "-n", "team-a")...)
		return err
	})
	refused(`User "jane" cannot list resource "configmaps" in API group "" in the namespace "team-b"`, asJane("get", "configmaps", "-n", "team-b")...)
	// berth's own CLI authenticates with jane's client certificate too.
	if out, stderr, code := run(t, "--kubeconfig", jane, "get", "configmaps", "-n", "team-a"); code != 0 || !strings.Contains(out, "app") {
		t.Errorf("berth get as jane in team-a: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := run(t, "--kubeconfig", jane, "get", "configmaps", "-n", "team-b"); code == 0 ||
		!strings.Contains(stderr, `User "jane" cannot list resource "configmaps" in API group "" in the namespace "team-b"`) {
		t.Errorf("berth get as jane in team-b: exit %d\n%s", code, stderr)
	}
	refused(`User "jane" cannot list resource "configmaps" in API group "" at the cluster scope`, asJane("get", "configmaps", "-A")...)
	refused(`User "jane" cannot patch resource "configmaps" in API group "" in the namespace "team-a"`,
		asJane("label", "configmap", "app", "x=y", "-n", "team-a")...)
	refused(`User "jane" cannot list resource "secrets"`, asJane("get", "secrets", "-n", "team-a")...)
	if out := strings.TrimSpace(kc("auth", "can-i", "list", "pods", "-n", "team-a", "--as", "jane", "--as-group", "devs")); out != "yes" {
		t.Errorf("can-i list pods as jane in team-a: %q", out)
	}
	if out, _ := s.kubectlErr(t, "auth", "can-i", "list", "pods", "-n", "team-b", "--as", "jane"); !strings.HasPrefix(out, "no") {
		t.Errorf("can-i list pods as jane in team-b: %q", out)
	}
	if out := kc(asJane("auth", "can-i", "--list", "-n", "team-a")...); !strings.Contains(out, "configmaps") || strings.Contains(out, "secrets ") {
		t.Errorf("can-i --list as jane:\n%s", out)
	}

	// A user of the token file, by its group.
	asBob := func(args ...string) []string { return append([]string{"--token", "bob-secret-token"}, args...) }
	refused(`User "bob" cannot list resource "configmaps"`, asBob("get", "configmaps", "-n", "team-b")...)
	kc("create", "rolebinding", "auditors-view", "--clusterrole=view", "--group=auditors", "-n", "team-b")
	waitFor(t, 30e9, "bob reads team-b", func() error {
		_, err := s.kubectlErr(t, asBob("get", "configmaps", "-n", "team-b")...)
		return err
	})

	// A service account's token: refused, naming the permission, until a
	// Role lets it update the ConfigMap.
	kc("create", "serviceaccount", "operator", "-n", "team-a")
	tok := strings.TrimSpace(kc("create", "token", "operator", "-n", "team-a"))
	asOp := func(args ...string) []string { return append([]string{"--token", tok}, args...) }
	refused(`configmaps "app" is forbidden: User "system:serviceaccount:team-a:operator" cannot get resource "configmaps" in API group "" in the namespace "team-a"`,
		asOp("get", "configmap", "app", "-n", "team-a")...)
	kc("create", "role", "cm-writer", "--verb=get,update,patch", "--resource=configmaps", "--resource-name=app", "-n", "team-a")
	kc("create", "rolebinding", "operator-cm", "--role=cm-writer", "--serviceaccount=team-a:operator", "-n", "team-a")
	waitFor(t, 30e9, "the operator updates its ConfigMap", func() error {
		_, err := s.kubectlErr(t, asOp("label", "configmap", "app", "updated=yes", "-n", "team-a")...)
		return err
	})
	refused(`User "system:serviceaccount:team-a:operator" cannot get resource "configmaps" in API group "" in the namespace "team-b"`,
		asOp("get", "configmap", "app", "-n", "team-b")...)

	// Escalation: jane, admin of team-b, cannot grant what she lacks.
	kc("create", "rolebinding", "jane-admin", "--clusterrole=admin", "--user=jane", "-n", "team-b")
	waitFor(t, 30e9, "jane administers team-b", func() error {
		_, err := s.kubectlErr(t, asJane("create", "role", "reader", "--verb=get", "--resource=pods", "-n", "team-b")...)
		return err
	})
	refused(`is attempting to grant RBAC permissions not currently held`,
		asJane("create", "rolebinding", "jane-root", "--clusterrole=cluster-admin", "--user=jane", "-n", "team-b")...)
	refused(`is attempting to grant RBAC permissions not currently held`,
		asJane("create", "role", "nodes", "--verb=get", "--resource=nodes", "-n", "team-b")...)
	refused(`User "jane" cannot impersonate resource "users"`, asJane("get", "pods", "-n", "team-b", "--as", "admin")...)

	// kubectl auth reconcile applies roles and bindings as Kubernetes does.
	manifest := filepath.Join(dir, "rbac.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: lease-reader, namespace: team-a}
rules:
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lease-reader, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lease-reader}
subjects: [{kind: User, name: jane, apiGroup: rbac.authorization.k8s.io}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := kc("auth", "reconcile", "-f", manifest); !strings.Contains(out, "role.rbac.authorization.k8s.io/lease-reader") {
		t.Errorf("kubectl auth reconcile: %s", out)
	}
	if out := strings.TrimSpace(kc("auth", "can-i", "list", "leases.coordination.k8s.io", "-n", "team-a", "--as", "jane")); out != "yes" {
		t.Errorf("can-i list leases as jane after reconcile: %q", out)
	}
	if out := kc("get", "clusterroles"); !strings.Contains(out, "cluster-admin") || !strings.Contains(out, "system:discovery") {
		t.Errorf("get clusterroles: %s", out)
	}
	if out, _, _ := s.berth(t, "describe", "rolebinding", "operator-cm", "-n", "team-a"); !strings.Contains(out, "ServiceAccount  operator  team-a") {
		t.Errorf("berth describe rolebinding: %s", out)
	}
}

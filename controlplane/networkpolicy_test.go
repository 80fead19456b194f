package controlplane_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/testtool"
)

// TestKubectlNetworkPolicies: kubectl finds NetworkPolicy by its short
// name, applies one, lists it with its columns, and gets Kubernetes'
// message for a bad one and for an unknown field.
func TestKubectlNetworkPolicies(t *testing.T) {
	kubectl := testtool.Need(t, "kubectl")
	s := cptest.Start(t, controlplane.Config{})
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", s.Credentials().Paths.AdminKubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web-from-frontend
spec:
  podSelector:
    matchLabels: {app: web}
  ingress:
    - from:
        - namespaceSelector:
            matchLabels: {team: frontend}
      ports:
        - port: http
`)
	if out, err := run("apply", "-f", good); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	out, err := run("get", "netpol")
	if err != nil {
		t.Fatalf("kubectl get netpol: %v\n%s", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME POD-SELECTOR AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "web-from-frontend app=web ") {
		t.Fatalf("kubectl get netpol:\n%s", out)
	}
	out, err = run("get", "networkpolicy", "web-from-frontend", "-o", "jsonpath={.spec.policyTypes} {.spec.ingress[0].ports[0].protocol}")
	if err != nil || out != `["Ingress"] TCP` {
		t.Fatalf("defaults: %v %q", err, out)
	}
	for _, tc := range []struct{ doc, msg string }{
		{`apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bad}
spec:
  podSelector: {}
  egress:
    - to:
        - ipBlock: {cidr: 198.18.0.0/16, except: [198.19.0.0/24]}
          podSelector: {}
`, "The NetworkPolicy \"bad\" is invalid: \n* spec.egress[0].to[0].ipBlock.except[0]: Invalid value: \"198.19.0.0/24\": must be a strict subset of `cidr`\n* spec.egress[0].to[0]: Forbidden: may not specify both ipBlock and another peer"},
		{`apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: typo}
spec:
  podSelector: {}
  ingress:
    - form: []
`, `spec.ingress[0].form: unknown field "form"`},
	} {
		out, err := run("apply", "-f", write("bad.yaml", tc.doc))
		if err == nil || !strings.Contains(out, tc.msg) {
			t.Errorf("kubectl apply: %v\n%s\nwant %q", err, out, tc.msg)
		}
	}
}

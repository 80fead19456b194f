package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// TestSourceObjectsCLI drives a Source made through the API, with the
// binary: apply it, reconcile it with progress, suspend it, diff the
// commit it holds back, resume it, and read its tree and history.
func TestSourceObjectsCLI(t *testing.T) {
	r := testtool.NewGitRepo(t, "fleet")
	settings := func(n int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"%d\"\n", n)
	}
	r.Write("apps/config.yaml", settings(0))
	r.Write("apps/web.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: busybox
        command: ["sleep", "3600"]
`)
	first := r.Push("main", "first")
	s := startServer(t, "--agent=false")

	manifest := filepath.Join(t.TempDir(), "source.yaml")
	src := fmt.Sprintf(`apiVersion: berth.dev/v1
kind: Source
metadata:
  name: fleet
spec:
  type: git
  url: file://%s
  path: apps
  interval: 1h
  wait: true
  timeout: 1m
`, r.Bare)
	if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s.mustBerth(t, "apply", "-f", manifest)

	out := s.mustBerth(t, "reconcile", "source", "fleet", "--with-source")
	for _, want := range []string{"► fetching source/fleet (git file://", "✔ fetched revision " + first + " (first)", "✔ built 2 objects", "✔ applied 2 objects", "source/fleet synced: revision " + first} {
		if !strings.Contains(out, want) {
			t.Errorf("reconcile --with-source does not say %q:\n%s", want, out)
		}
	}
	waitFor(t, 30*time.Second, "fleet healthy", func() error {
		out, _, _ := s.berth(t, "get", "src", "fleet")
		if !strings.Contains(out, "True") || !strings.Contains(out, "Healthy") || !strings.Contains(out, first[:12]) {
			return fmt.Errorf("get src:\n%s", out)
		}
		return nil
	})

	if out := s.mustBerth(t, "suspend", "source", "fleet"); out != "source/fleet suspended\n" {
		t.Errorf("suspend: %q", out)
	}
	waitFor(t, 30*time.Second, "fleet suspended", func() error {
		out, _, _ := s.berth(t, "get", "src", "fleet")
		if !strings.Contains(out, "Suspended") {
			return fmt.Errorf("get src:\n%s", out)
		}
		return nil
	})
	r.Write("apps/config.yaml", settings(1))
	second := r.Push("main", "count 1")
	if _, stderr, code := s.berth(t, "reconcile", "source", "fleet"); code == 0 || !strings.Contains(stderr, "suspended") {
		t.Errorf("reconcile of a suspended source: exit %d, %s", code, stderr)
	}
	out, stderr, code := s.berth(t, "diff", "source", "fleet")
	if code != 1 || !strings.Contains(out, "+++ merged/configmap/default/settings") || !strings.Contains(out, `+  count: "1"`) || !strings.Contains(stderr, second) {
		t.Errorf("diff source: exit %d\n%s\n%s", code, out, stderr)
	}

	s.mustBerth(t, "resume", "source", "fleet")
	waitFor(t, 30*time.Second, "the held commit applied", func() error {
		out, _, _ := s.berth(t, "get", "cm", "settings", "-o", "jsonpath={.data.count}")
		if out != "1" {
			return fmt.Errorf("count %q", out)
		}
		return nil
	})
	waitFor(t, 30*time.Second, "nothing left to diff", func() error {
		out, stderr, code := s.berth(t, "diff", "source", "fleet")
		if code != 0 {
			return fmt.Errorf("diff source: exit %d\n%s\n%s", code, out, stderr)
		}
		return nil
	})

	tree := s.mustBerth(t, "tree", "source", "fleet")
	for _, want := range []string{"Source/fleet", "├── ConfigMap/default/settings  Current", "└── Deployment/default/web  Current"} {
		if !strings.Contains(tree, want) {
			t.Errorf("tree does not show %q:\n%s", want, tree)
		}
	}
	describe := s.mustBerth(t, "describe", "src", "fleet")
	for _, want := range []string{"History:", "Health:", "Healthy", "Last Healthy Revision:", second, "2 objects healthy"} {
		if !strings.Contains(describe, want) {
			t.Errorf("describe does not show %q:\n%s", want, describe)
		}
	}
}

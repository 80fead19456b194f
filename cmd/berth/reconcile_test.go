package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/source"
)

// startSourcedControlPlane runs a real control plane (memory store) with
// sources, and returns its admin kubeconfig.
func startSourcedControlPlane(t *testing.T, sources ...string) string {
	t.Helper()
	var specs []source.Spec
	for _, s := range sources {
		spec, err := source.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	kubeconfig := cptest.Start(t, controlplane.Config{Sources: specs}).Credentials().Paths.AdminKubeconfig
	waitReady(t, func() bool {
		return runBerth(t, "", "get", "ns", "default", "--kubeconfig", kubeconfig).code == exitOK
	})
	return kubeconfig
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func configMapManifest(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  key: %q\n", name, value)
}

func TestReconcileSource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), configMapManifest("a", "1"))
	writeFile(t, filepath.Join(dir, "b.yaml"), configMapManifest("b", "1")+"---\n"+configMapManifest("c", "1"))
	kubeconfig := startSourcedControlPlane(t, "name=site,"+dir)
	berth := func(args ...string) result {
		t.Helper()
		return runBerth(t, "", append(args, "--kubeconfig", kubeconfig)...)
	}

	r := berth("reconcile", "source", "site")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "source/site synced: revision sha256:") || !strings.Contains(r.stdout, "\nApplied revision sha256:") {
		t.Fatalf("reconcile: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	writeFile(t, filepath.Join(dir, "a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndatta: {}\n")
	r = berth("reconcile", "source", "site")
	if r.code != exitFailure || !strings.Contains(r.stderr, "source/site not synced (InvalidRevision)") || !strings.Contains(r.stderr, `a.yaml:doc 0 (line 5): datta: unknown field "datta"`) {
		t.Errorf("reconcile broken: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := berth("get", "cm", "a"); r.code != exitOK {
		t.Errorf("a is gone after a rejected revision: %s", r.stderr)
	}

	// Only a.yaml left, fixed: 2 of 3 objects go, which the guard holds.
	writeFile(t, filepath.Join(dir, "a.yaml"), configMapManifest("a", "2"))
	os.Remove(filepath.Join(dir, "b.yaml"))
	r = berth("reconcile", "source", "site")
	if r.code != exitFailure || !strings.Contains(r.stderr, "(PruneGuard)") || !strings.Contains(r.stderr, "would prune 2 of the 3 objects") {
		t.Errorf("reconcile guarded: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = berth("reconcile", "source", "site", "--allow-prune")
	if r.code != exitOK || !strings.Contains(r.stdout, "1 updated, 2 pruned") {
		t.Errorf("reconcile --allow-prune: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := berth("get", "cm", "b"); r.code != exitFailure {
		t.Errorf("b not pruned: %s", r.stdout)
	}

	r = berth("reconcile", "source", "nope")
	if r.code != exitFailure || !strings.Contains(r.stderr, `sources.berth.dev "nope" not found`) {
		t.Errorf("reconcile unknown: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if r := berth("reconcile", "source"); r.code != exitUsage {
		t.Errorf("no name: exit %d", r.code)
	}
}

package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

func deploymentYAML(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  replicas: %d
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      containers:
      - name: web
        image: busybox
        command: ["sleep", "3600"]
`, name, replicas, name, name)
}

// TestSourceHealthOrderAndRollback: a Source that waits for health is
// Ready only once its Deployment has rolled out, and one that depends on
// it is held back until then; a commit whose rollout cannot finish (no
// node to run its pod) is reported not Ready naming the Deployment, and
// the last healthy revision is applied again.
func TestSourceHealthOrderAndRollback(t *testing.T) {
	appDir, afterDir := t.TempDir(), t.TempDir()
	write(t, filepath.Join(appDir, "web.yaml"), deploymentYAML("web", 0))
	write(t, filepath.Join(afterDir, "c.yaml"), cm("after", "1"))
	cp := startControlPlane(t, t.TempDir(), StoreMemory)
	st := cp.Store()
	ctx := context.Background()

	after := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "after"},
		Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: afterDir, DependsOn: []string{"app"}}}
	if _, err := st.Create(ctx, after); err != nil {
		t.Fatal(err)
	}
	poll(t, "after held back", func() error {
		src := sourceObject(t, st, "after")
		if s, r := readyOf(src); s != "False" || r != api.ReasonDependencyNotReady {
			return fmt.Errorf("ready %s %s", s, r)
		}
		if msg := meta.FindStatusCondition(src.Status.Conditions, api.SourceReady).Message; !strings.Contains(msg, "app (no such Source)") {
			return fmt.Errorf("message %q", msg)
		}
		return nil
	})
	if _, err := configData(st, "after"); !store.IsNotFound(err) {
		t.Fatalf("after applied before app: %v", err)
	}

	app := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: appDir, Wait: true,
			Timeout: &metav1.Duration{Duration: 3 * time.Second}, RollbackOnFailure: true}}
	if _, err := st.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	var healthy string
	poll(t, "app healthy and after applied", func() error {
		src := sourceObject(t, st, "app")
		if s, r := readyOf(src); s != "True" || src.Status.Health != api.SourceHealthy {
			return fmt.Errorf("app: ready %s %s, health %q", s, r, src.Status.Health)
		}
		healthy = src.Status.LastHealthyRevision
		_, err := configData(st, "after")
		return err
	})
	if healthy == "" || healthy != sourceObject(t, st, "app").Status.LastAppliedRevision {
		t.Errorf("lastHealthyRevision %q", healthy)
	}

	write(t, filepath.Join(appDir, "web.yaml"), deploymentYAML("web", 1))
	poll(t, "the failed rollout rolled back", func() error {
		src := sourceObject(t, st, "app")
		if s, r := readyOf(src); s != "False" || r != api.ReasonRolledBack {
			return fmt.Errorf("ready %s %s", s, r)
		}
		return nil
	})
	src := sourceObject(t, st, "app")
	msg := meta.FindStatusCondition(src.Status.Conditions, api.SourceReady).Message
	for _, want := range []string{"Deployment/default/web", "did not become healthy within 3s", "rolled back to revision " + healthy} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if src.Status.Health != api.SourceDegraded || len(src.Status.Unhealthy) != 1 || !strings.HasPrefix(src.Status.Unhealthy[0], "Deployment/default/web") {
		t.Errorf("health %q, unhealthy %q", src.Status.Health, src.Status.Unhealthy)
	}
	obj, err := st.Get(api.KindOf(&api.Deployment{}), "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if r := obj.(*api.Deployment).Spec.Replicas; r == nil || *r != 0 {
		t.Errorf("web has %v replicas after the rollback, want 0", r)
	}
	if n := len(src.Status.History); n < 2 || src.Status.History[0].Reason != api.ReasonRolledBack {
		t.Errorf("history %+v", src.Status.History)
	}
}

// gitCommit writes files into the repository dir (made on first use) and
// commits them, returning the commit's SHA.
func gitCommit(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	testtool.Need(t, "git")
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		git("init", "--quiet", "--initial-branch=main")
	}
	for name, content := range files {
		write(t, filepath.Join(dir, name), content)
	}
	git("add", "-A")
	git("commit", "--quiet", "-m", "change")
	return git("rev-parse", "HEAD")
}

// TestRollbackAfterRestart: the last healthy revision outlives the
// server. A git Source healthy at one commit, then stopped; a commit
// whose rollout fails arrives while it is down; the server started again
// reads the healthy commit again and rolls back to it.
func TestRollbackAfterRestart(t *testing.T) {
	repo, dataDir := t.TempDir(), t.TempDir()
	good := gitCommit(t, repo, map[string]string{"web.yaml": deploymentYAML("web", 0)})
	cp := startControlPlane(t, dataDir, StoreBolt)
	app := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: api.SourceSpec{Type: api.SourceTypeGit, URL: "file://" + repo, Ref: "main", Wait: true,
			Timeout: &metav1.Duration{Duration: 3 * time.Second}, RollbackOnFailure: true}}
	if _, err := cp.Store().Create(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	poll(t, "app healthy", func() error {
		src := sourceObject(t, cp.Store(), "app")
		if s, r := readyOf(src); s != "True" || src.Status.LastHealthyRevision != good {
			return fmt.Errorf("ready %s %s, last healthy %q", s, r, src.Status.LastHealthyRevision)
		}
		return nil
	})
	cp.stop()

	bad := gitCommit(t, repo, map[string]string{"web.yaml": deploymentYAML("web", 1)})
	cp = startControlPlane(t, dataDir, StoreBolt)
	st := cp.Store()
	poll(t, "the failed rollout rolled back", func() error {
		src := sourceObject(t, st, "app")
		if s, r := readyOf(src); s != "False" || r != api.ReasonRolledBack {
			return fmt.Errorf("ready %s %s: %v", s, r, src.Status.Conditions)
		}
		return nil
	})
	msg := meta.FindStatusCondition(sourceObject(t, st, "app").Status.Conditions, api.SourceReady).Message
	for _, want := range []string{"Revision " + bad, "Deployment/default/web", "rolled back to revision " + good} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	obj, err := st.Get(api.KindOf(&api.Deployment{}), "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if r := obj.(*api.Deployment).Spec.Replicas; r == nil || *r != 0 {
		t.Errorf("web has %v replicas after the rollback, want 0", r)
	}
}

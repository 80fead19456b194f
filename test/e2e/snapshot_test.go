package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store/bolt"
)

// configMapManifest is a ConfigMap of that name.
func configMapManifest(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\ndata:\n  k: v\n---\n", name)
}

// berth snapshot save copies a bolt server's store while writes go on:
// the copy opens with the store's loader and holds every object
// acknowledged before the save began; restored into a new data dir, a
// server started there serves them. Restore refuses a data dir whose
// server runs, and a server on the memory store has nothing to save.
func TestSnapshotSaveAndRestore(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	var before strings.Builder
	for i := range 20 {
		before.WriteString(configMapManifest(fmt.Sprintf("before-%d", i)))
	}
	manifest := filepath.Join(dir, "before.yaml")
	if err := os.WriteFile(manifest, []byte(before.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s.mustBerth(t, "apply", "-f", manifest)

	// A writer goes on creating configmaps, one `berth apply` each.
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			cmd := exec.Command(bin, "--kubeconfig", s.kubeconfig, "apply", "-f", "-")
			cmd.Stdin = strings.NewReader(configMapManifest(fmt.Sprintf("during-%d", i)))
			if out, err := cmd.CombinedOutput(); err != nil {
				writeErr = fmt.Errorf("apply during-%d: %v: %s", i, err, out)
				return
			}
			acked.Store(int64(i + 1))
		}
	})
	waitFor(t, 30*time.Second, "writes to go on", func() error {
		if acked.Load() < 2 {
			return fmt.Errorf("%d acknowledged", acked.Load())
		}
		return nil
	})
	ackedBefore := int(acked.Load())
	snap := filepath.Join(dir, "berth.db")
	out := s.mustBerth(t, "snapshot", "save", snap)
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	if !strings.HasPrefix(out, "Snapshot saved to "+snap+": revision ") {
		t.Fatalf("save printed %q", out)
	}

	b, err := bolt.Open(snap)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	if _, err := b.Load(func(o api.Object) error {
		names[o.GetName()] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	for i := range 20 {
		if !names[fmt.Sprintf("before-%d", i)] {
			t.Errorf("before-%d is not in the snapshot", i)
		}
	}
	for i := range ackedBefore {
		if !names[fmt.Sprintf("during-%d", i)] {
			t.Errorf("during-%d, acknowledged before the save began, is not in the snapshot", i)
		}
	}

	// The running server holds its store.
	if _, stderr, code := run(t, "snapshot", "restore", snap, "--data-dir", s.dataDir); code != 1 || !strings.Contains(stderr, "stop the berth server") {
		t.Fatalf("restore into a running server's data dir: exit %d, %s", code, stderr)
	}

	fresh := t.TempDir()
	if stdout, stderr, code := run(t, "snapshot", "restore", snap, "--data-dir", fresh); code != 0 || !strings.Contains(stdout, "Restored "+snap) {
		t.Fatalf("restore: exit %d, %s%s", code, stdout, stderr)
	}
	restored := startServerIn(t, fresh)
	got := restored.mustBerth(t, "get", "configmaps", "-o", "name")
	for _, name := range []string{"before-0", "before-19", "during-0"} {
		if !strings.Contains(got, "configmap/"+name+"\n") {
			t.Errorf("restored server lacks %s: %s", name, got)
		}
	}
}

func TestSnapshotMemoryStore(t *testing.T) {
	s := startServer(t, "--store", "memory")
	snap := filepath.Join(t.TempDir(), "berth.db")
	_, stderr, code := s.berth(t, "snapshot", "save", snap)
	if code != 1 || !strings.Contains(stderr, "--store memory") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(snap); err == nil {
		t.Fatal("a file was saved")
	}
}

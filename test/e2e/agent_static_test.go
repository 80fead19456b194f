package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// staticEchoPod is a static pod that writes its name into its emptyDir
// volume and answers text and its name on addr.
func staticEchoPod(addr, text string) string {
	script := fmt.Sprintf(`echo "$POD_NAME" > "$BERTH_VOLUME_DATA/name" && exec %q toolbox http-echo --listen %s --text "%s $POD_NAME"`, bin, addr, text)
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: data, emptyDir: {}}
  containers:
  - name: echo
    image: berth
    command: [/bin/sh, -c, %q]
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
`, script)
}

// TestStaticPodsStandalone runs an agent with no server on a manifest
// directory, as a user edits it: the pod runs with its name from the
// downward API and its volume; an edit replaces it; a broken file keeps
// the last good pod running and is named in the agent's output; deleting
// the file stops the pod.
func TestStaticPodsStandalone(t *testing.T) {
	const ip = "127.0.0.5"
	dataDir, manifests := t.TempDir(), t.TempDir()
	t.Cleanup(func() { reapContainers(t, dataDir) })
	addr := fmt.Sprintf("%s:%d", ip, freePort(t, ip))
	file := filepath.Join(manifests, "web.yaml")
	writeAtomic(t, file, staticEchoPod(addr, "first"))

	a := start(t, "agent", "--manifest-dir", manifests, "--data-dir", dataDir, "--node-name", "solo", "--node-ip", ip)
	answers := func(want string) func() error {
		return func() error {
			select {
			case <-a.done:
				return fmt.Errorf("agent exited: %v", a.err)
			default:
			}
			body, err := httpGet("http://" + addr + "/")
			if err != nil {
				return err
			}
			if !strings.Contains(body, want) {
				return fmt.Errorf("answered %q", body)
			}
			return nil
		}
	}
	waitFor(t, 30*time.Second, "the static pod to answer", answers("first web-solo"))
	names, err := filepath.Glob(filepath.Join(dataDir, "pods", "*", "volumes", "data", "name"))
	if err != nil || len(names) != 1 {
		t.Fatalf("the pod's volume file: %v %v", names, err)
	}
	if b, err := os.ReadFile(names[0]); err != nil || strings.TrimSpace(string(b)) != "web-solo" {
		t.Fatalf("%s holds %q: %v", names[0], b, err)
	}

	// An edit: a new pod, answering the new text.
	writeAtomic(t, file, staticEchoPod(addr, "second"))
	waitFor(t, 30*time.Second, "the edited pod to answer", answers("second web-solo"))

	// A broken file: the last good pod keeps answering, the agent says
	// which file is wrong.
	writeAtomic(t, file, "apiVersion: v1\nkind: Pod\nmetadata: {name: web\nspec: [\n")
	waitFor(t, 30*time.Second, "the agent to report web.yaml", func() error {
		if out := a.Output(); !strings.Contains(out, "web.yaml:doc 0") || !strings.Contains(out, "invalid YAML") {
			return fmt.Errorf("output:\n%s", out)
		}
		return nil
	})
	for range 3 {
		if err := answers("second web-solo")(); err != nil {
			t.Fatalf("the last good pod stopped answering with a broken manifest: %v", err)
		}
	}
	if n := strings.Count(a.Output(), "web.yaml:doc 0"); n != 1 {
		t.Errorf("the broken file is reported %d times, want once:\n%s", n, a.Output())
	}

	// Fixed again: the pod of the fixed text.
	writeAtomic(t, file, staticEchoPod(addr, "third"))
	waitFor(t, 30*time.Second, "the fixed pod to answer", answers("third web-solo"))

	// Deleted: nothing answers any more.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the pod to stop", func() error {
		if body, err := httpGet("http://" + addr + "/"); err == nil {
			return fmt.Errorf("still answers %q", body)
		}
		return nil
	})
}

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEmptiedStoreKeepsRunningPods empties a stopped server's state.db
// under a running pod: the server refuses to start, saying how to restore
// a snapshot and how to start afresh; started with --reset-store it
// serves an empty cluster, and the agent, which joined the old store,
// keeps the pod running rather than stopping it as an orphan, and says
// why.
func TestEmptiedStoreKeepsRunningPods(t *testing.T) {
	s := startServer(t)
	a := startAgent(t, s, "n2", "127.0.0.2")
	port := freePort(t, a.ip)
	s.applyText(t, echoDeployment("kept", 1, port, "kept through a store reset"))
	var containerID string
	var pid int
	waitFor(t, 60*time.Second, "the kept pod running", func() error {
		pods, err := podsOf(t, s, "kept")
		if err != nil {
			return err
		}
		if len(pods) != 1 || field(pods[0], "status.phase") != "Running" {
			return fmt.Errorf("%d pods", len(pods))
		}
		cs := containerStatus(pods[0])
		if cs == nil || cs["ready"] != true {
			return fmt.Errorf("not ready")
		}
		containerID, _ = cs["containerID"].(string)
		pid, err = containerPID(a.dataDir, containerID)
		return err
	})

	s.stop(syscall.SIGTERM, 10*time.Second)
	if err := os.Truncate(filepath.Join(s.dataDir, "state.db"), 0); err != nil {
		t.Fatal(err)
	}
	listen := strings.TrimPrefix(s.url, "https://")
	_, stderr, code := run(t, "server", "--data-dir", s.dataDir, "--listen", listen, "--agent=false",
		"--dns-listen", fmt.Sprintf("127.0.0.1:%d", s.dnsPort), "--dns-upstream", "none",
		"--dns-metrics-listen", "127.0.0.1:0", "--dns-health-listen", "127.0.0.1:0")
	for _, want := range []string{"state.db is empty", "berth snapshot restore FILE --data-dir " + s.dataDir, "--reset-store"} {
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("a server on an emptied state.db: exit %d, stderr does not say %q:\n%s", code, want, stderr)
		}
	}

	fresh := startServerIn(t, s.dataDir, "--listen", listen, "--reset-store")
	if out := fresh.mustBerth(t, "get", "deployments", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("the fresh store holds deployments: %q", out)
	}
	waitFor(t, 60*time.Second, "the agent to say it keeps the pod", func() error {
		select {
		case <-a.done:
			return fmt.Errorf("agent exited: %v", a.err)
		default:
		}
		if out := a.Output(); !strings.Contains(out, "not stopping running pods") || !strings.Contains(out, "pod=default/kept-") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	waitFor(t, 30*time.Second, "the StoreChanged event on the node", func() error {
		out, stderr, code := fresh.berth(t, "get", "events", "-A")
		if code != 0 || !strings.Contains(out, "StoreChanged") {
			return fmt.Errorf("exit %d: %s%s", code, out, stderr)
		}
		return nil
	})
	// The agent's relist of the empty store is behind it, and the pod
	// runs on.
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the pod's container (pid %d) was stopped: %v", pid, err)
	}
	if body, err := httpGet(fmt.Sprintf("http://%s:%d/", a.ip, port)); err != nil || !strings.Contains(body, "kept through a store reset") {
		t.Errorf("the kept pod answers %q: %v", body, err)
	}
}

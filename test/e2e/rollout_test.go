package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// sleeperDeployment is a Deployment of processes that share no port, so
// that any number of them fit on one node, ready a second after they
// start (so that a rollout takes long enough to watch).
func sleeperDeployment(name string, replicas int, version string) string {
	return deploymentYAML(name, replicas, fmt.Sprintf(`      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: sleeper
        command: [sh, -c, "echo %s; exec sleep 100000"]
        readinessProbe:
          exec: {command: ["true"]}
          initialDelaySeconds: 1
          periodSeconds: 1
`, version))
}

// readyIs is a condition for waitFor: want pods of app Ready.
func readyIs(t testing.TB, s *server, app string, want int) func() error {
	return func() error {
		if pods, err := readyPods(t, s, app); err != nil || len(pods) != want {
			return fmt.Errorf("%d ready (%v)", len(pods), err)
		}
		return nil
	}
}

// TestRollingUpdateKeepsAvailability: a Deployment of 3 on a real agent
// rolls a new command out without ever having fewer than replicas −
// maxUnavailable (3 − 0, with the default 25%) ready pods, scales to 0 and
// back, and goes with its ReplicaSets and pods when deleted.
func TestRollingUpdateKeepsAvailability(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	startAgent(t, s, "n1", "127.0.0.21")
	s.applyText(t, sleeperDeployment("app", 3, "v1"))
	waitFor(t, 60*time.Second, "3 ready pods", readyIs(t, s, "app", 3))
	s.mustBerth(t, "rollout", "status", "deploy/app", "--timeout", "30s")

	// Sample the ready pods through the rollout.
	var (
		mu      sync.Mutex
		minimum = 3
		samples int
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if pods, err := readyPods(t, s, "app"); err == nil {
				mu.Lock()
				minimum, samples = min(minimum, len(pods)), samples+1
				mu.Unlock()
			}
		}
	}()
	s.applyText(t, sleeperDeployment("app", 3, "v2"))
	out, stderr, code := s.berth(t, "rollout", "status", "deploy/app", "--timeout", "60s")
	close(stop)
	<-done
	if code != 0 {
		t.Fatalf("rollout status: exit %d\n%s%s", code, out, stderr)
	}
	mu.Lock()
	t.Logf("rollout: %d samples, never fewer than %d ready", samples, minimum)
	if minimum < 3 || samples < 10 {
		t.Errorf("availability: %d samples, minimum %d ready; want at least 3 ready throughout", samples, minimum)
	}
	mu.Unlock()
	if !strings.Contains(out, "successfully rolled out") {
		t.Errorf("rollout status:\n%s", out)
	}
	if logs := s.mustBerth(t, "logs", "deploy/app"); strings.TrimSpace(logs) != "v2" {
		t.Errorf("logs after the rollout: %q", logs)
	}

	// Back to v1, then to 0 and back to 3.
	s.mustBerth(t, "rollout", "undo", "deploy/app")
	s.mustBerth(t, "rollout", "status", "deploy/app", "--timeout", "60s")
	waitFor(t, 10*time.Second, "the v1 pods' output", func() error {
		if logs, _, _ := s.berth(t, "logs", "deploy/app"); strings.TrimSpace(logs) != "v1" {
			return fmt.Errorf("logs %q", logs)
		}
		return nil
	})
	s.applyText(t, sleeperDeployment("app", 0, "v1"))
	waitFor(t, 30*time.Second, "no pods", func() error {
		list, err := s.getJSON(t, "pods", "-l", "app=app")
		if err != nil {
			return err
		}
		if n := len(list["items"].([]any)); n != 0 {
			return fmt.Errorf("%d pods", n)
		}
		return nil
	})
	s.applyText(t, sleeperDeployment("app", 3, "v1"))
	waitFor(t, 60*time.Second, "3 ready pods again", readyIs(t, s, "app", 3))

	s.mustBerth(t, "delete", "deploy", "app")
	waitFor(t, 30*time.Second, "the ReplicaSets and pods gone", func() error {
		for _, kind := range []string{"rs", "pods"} {
			list, err := s.getJSON(t, kind, "-l", "app=app")
			if err != nil {
				return err
			}
			if n := len(list["items"].([]any)); n != 0 {
				return fmt.Errorf("%d %s", n, kind)
			}
		}
		return nil
	})
}

// TestQuotaStopsTheFourthPod: a quota of 3 pods lets a Deployment of 4 run
// 3, and the ReplicaSet says why the fourth is missing.
func TestQuotaStopsTheFourthPod(t *testing.T) {
	s := startServer(t)
	startAgent(t, s, "n1", "127.0.0.22")
	s.applyText(t, `apiVersion: v1
kind: ResourceQuota
metadata:
  name: pods
spec:
  hard:
    pods: "3"
`)
	s.applyText(t, sleeperDeployment("capped", 4, "v1"))
	waitFor(t, 60*time.Second, "3 ready pods", readyIs(t, s, "capped", 3))
	want := "exceeded quota: pods, requested: pods=1, used: pods=3, limited: pods=3"
	waitFor(t, 30*time.Second, "the ReplicaSet to report the quota", func() error {
		out, _, _ := s.berth(t, "describe", "rs", "-l", "app=capped")
		if !strings.Contains(out, want) || !strings.Contains(out, "FailedCreate") || !regexp.MustCompile(`ReplicaFailure\s+True\s+FailedCreate`).MatchString(out) {
			return fmt.Errorf("describe rs:\n%s", out)
		}
		return nil
	})
	// kubectl reads the condition from the API as it reads Kubernetes'.
	if out := s.kubectl(t, "describe", "rs", "-l", "app=capped"); !regexp.MustCompile(`ReplicaFailure\s+True\s+FailedCreate`).MatchString(out) {
		t.Errorf("kubectl describe rs shows no ReplicaFailure:\n%s", out)
	}
	waitFor(t, 30*time.Second, "the Deployment to carry the ReplicaSet's failure", func() error {
		d, err := s.getJSON(t, "deploy", "capped")
		if err != nil {
			return err
		}
		conds, _ := field(d, "status.conditions").([]any)
		for _, c := range conds {
			if c := c.(map[string]any); c["type"] == "ReplicaFailure" && c["reason"] == "FailedCreate" && strings.Contains(fmt.Sprint(c["message"]), want) {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})
	quota, err := s.getJSON(t, "quota", "pods")
	if err != nil {
		t.Fatal(err)
	}
	if used := field(quota, "status.used.pods"); used != "3" {
		t.Errorf("quota used %v, want 3", used)
	}
	if list, _ := s.getJSON(t, "pods", "-l", "app=capped"); len(list["items"].([]any)) != 3 {
		t.Errorf("%d pods exist, want 3", len(list["items"].([]any)))
	}
}

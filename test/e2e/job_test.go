package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// TestJobsRunToTheirEnd runs Jobs on an agent with the exec runtime: one
// of 5 completions, 2 at a time, completes (kubectl wait sees it), one
// whose pods fail stops at its backoffLimit with BackoffLimitExceeded,
// and one made by kubectl create job completes; kubectl delete takes a
// Job's pods with it (background and foreground), or leaves them
// (orphan).
func TestJobsRunToTheirEnd(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "kubectl")
	s := startServer(t)
	startAgent(t, s, "jobs", "127.0.0.81")
	s.applyText(t, `apiVersion: batch/v1
kind: Job
metadata:
  name: five
spec:
  completions: 5
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: berth
        command: [/bin/sh, -c, "echo done"]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: failing
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: berth
        command: [/bin/sh, -c, "echo no; exit 3"]
`)
	s.kubectl(t, "create", "job", "quick", "--image=berth", "--", "/bin/sh", "-c", "echo quick")
	out := s.kubectl(t, "wait", "--for=condition=complete", "job/five", "job/quick", "--timeout=90s")
	if !strings.Contains(out, "job.batch/five condition met") || !strings.Contains(out, "job.batch/quick condition met") {
		t.Fatalf("kubectl wait: %s", out)
	}
	j, err := s.getJSON(t, "job", "five")
	if err != nil {
		t.Fatal(err)
	}
	if field(j, "status.succeeded") != 5.0 || field(j, "status.completionTime") == nil {
		t.Errorf("job five: status %v", field(j, "status"))
	}
	pods := jobPods(t, s, "five")
	if len(pods) != 5 {
		t.Errorf("job five made %d pods, want 5", len(pods))
	}
	for _, p := range pods {
		if field(p, "status.phase") != "Succeeded" || field(p, "metadata.finalizers") != nil {
			t.Errorf("pod %v: phase %v finalizers %v", field(p, "metadata.name"), field(p, "status.phase"), field(p, "metadata.finalizers"))
		}
	}
	if logs := s.kubectl(t, "logs", "job/quick"); !strings.Contains(logs, "quick") {
		t.Errorf("kubectl logs job/quick: %q", logs)
	}

	out = s.kubectl(t, "wait", "--for=condition=failed", "job/failing", "--timeout=90s")
	if !strings.Contains(out, "condition met") {
		t.Fatalf("kubectl wait failed: %s", out)
	}
	j, err = s.getJSON(t, "job", "failing")
	if err != nil {
		t.Fatal(err)
	}
	if field(j, "status.failed") != 2.0 || !hasJobCondition(j, "Failed", "BackoffLimitExceeded") {
		t.Errorf("job failing: status %v", field(j, "status"))
	}
	if table := s.kubectl(t, "get", "jobs"); !strings.Contains(table, "failing") || !strings.Contains(table, "Failed") ||
		!strings.Contains(table, "5/5") {
		t.Errorf("kubectl get jobs:\n%s", table)
	}
	if desc := s.mustBerth(t, "describe", "job", "failing"); !strings.Contains(desc, "0 Active (0 Ready) / 0 Succeeded / 2 Failed") {
		t.Errorf("berth describe job failing:\n%s", desc)
	}

	s.kubectl(t, "delete", "job", "five")
	// Foreground: the Job goes once its pods have; orphan: its pods stay,
	// released by the job controller.
	s.kubectl(t, "delete", "job", "quick", "--cascade=foreground")
	s.kubectl(t, "delete", "job", "failing", "--cascade=orphan")
	waitFor(t, 30*time.Second, "the pods of five and quick gone, failing's kept", func() error {
		if n := len(jobPods(t, s, "five")) + len(jobPods(t, s, "quick")); n > 0 {
			return fmt.Errorf("%d pods left", n)
		}
		left := jobPods(t, s, "failing")
		if len(left) != 2 {
			return fmt.Errorf("%d pods of failing left, want 2", len(left))
		}
		for _, p := range left {
			if field(p, "metadata.ownerReferences") != nil || field(p, "metadata.finalizers") != nil {
				return fmt.Errorf("pod %v still owned or held", field(p, "metadata.name"))
			}
		}
		return nil
	})
	if _, err := s.getJSON(t, "job", "quick"); err == nil {
		t.Error("job quick still there after its foreground deletion")
	}
}

// jobPods lists the pods of a Job by its job-name label.
func jobPods(t testing.TB, s *server, job string) []map[string]any {
	t.Helper()
	list, err := s.getJSON(t, "pods", "-l", "batch.kubernetes.io/job-name="+job)
	if err != nil {
		t.Fatal(err)
	}
	items, _ := list["items"].([]any)
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i] = it.(map[string]any)
	}
	return out
}

func hasJobCondition(j map[string]any, typ, reason string) bool {
	conds, _ := field(j, "status.conditions").([]any)
	for _, c := range conds {
		c := c.(map[string]any)
		if c["type"] == typ && c["status"] == "True" && c["reason"] == reason {
			return true
		}
	}
	return false
}

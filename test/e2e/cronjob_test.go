package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// TestCronJobRunsEveryMinute runs a */1 CronJob on an agent with the exec
// runtime. Its status says it last ran three minutes ago, as after a
// control plane that was down: it runs at once for the most recent
// minute (one run, not three), then again at the next minute, and keeps
// one successful Job. kubectl create cronjob and create job --from work
// against it.
func TestCronJobRunsEveryMinute(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "kubectl")
	s := startServer(t)
	startAgent(t, s, "cron", "127.0.0.82")
	s.kubectl(t, "create", "cronjob", "tick", "--image=berth", "--schedule=*/1 * * * *", "--", "/bin/sh", "-c", "echo tick")
	s.kubectl(t, "patch", "cronjob", "tick", "--type=merge", "-p", `{"spec":{"successfulJobsHistoryLimit":1}}`)
	threeAgo := time.Now().Add(-3 * time.Minute).UTC().Format(time.RFC3339)
	s.kubectl(t, "patch", "cronjob", "tick", "--subresource=status", "--type=merge",
		"-p", fmt.Sprintf(`{"status":{"lastScheduleTime":%q}}`, threeAgo))

	// completeJobs lists the names of tick's Jobs that completed.
	completeJobs := func() ([]string, int, error) {
		list, err := s.getJSON(t, "jobs")
		if err != nil {
			return nil, 0, err
		}
		items, _ := list["items"].([]any)
		var done []string
		for _, it := range items {
			j := it.(map[string]any)
			name, _ := field(j, "metadata.name").(string)
			if strings.HasPrefix(name, "tick-") && hasJobCondition(j, "Complete", "CompletionsReached") {
				done = append(done, name)
			}
		}
		return done, len(items), nil
	}
	var first string
	waitFor(t, 30*time.Second, "the missed run made at once and complete", func() error {
		done, _, err := completeJobs()
		if err != nil || len(done) != 1 {
			return fmt.Errorf("complete jobs %v: %v", done, err)
		}
		first = done[0]
		return nil
	})
	waitFor(t, 90*time.Second, "the next minute's run, and the first trimmed", func() error {
		done, all, err := completeJobs()
		if err != nil {
			return err
		}
		if len(done) != 1 || done[0] == first || all != 1 {
			return fmt.Errorf("complete jobs %v of %d", done, all)
		}
		return nil
	})
	cj, err := s.getJSON(t, "cronjob", "tick")
	if err != nil {
		t.Fatal(err)
	}
	if field(cj, "status.lastSuccessfulTime") == nil || field(cj, "status.lastScheduleTime") == threeAgo {
		t.Errorf("status %v", field(cj, "status"))
	}
	if table := s.kubectl(t, "get", "cj"); !strings.Contains(table, "*/1 * * * *") {
		t.Errorf("kubectl get cj:\n%s", table)
	}

	// Suspended, it makes no more Jobs; one made by hand from it is its
	// own, and the newest, so kept.
	s.kubectl(t, "patch", "cronjob", "tick", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	s.kubectl(t, "create", "job", "by-hand", "--from=cronjob/tick")
	j, err := s.getJSON(t, "job", "by-hand")
	if err != nil {
		t.Fatal(err)
	}
	ann, _ := field(j, "metadata.annotations").(map[string]any)
	refs, _ := field(j, "metadata.ownerReferences").([]any)
	if ann["cronjob.kubernetes.io/instantiate"] != "manual" || len(refs) != 1 {
		t.Errorf("job by-hand: %v", field(j, "metadata"))
	}
	out := s.kubectl(t, "wait", "--for=condition=complete", "job/by-hand", "--timeout=60s")
	if !strings.Contains(out, "condition met") {
		t.Fatalf("kubectl wait: %s", out)
	}
	if desc := s.mustBerth(t, "describe", "cronjob", "tick"); !strings.Contains(desc, "Suspend:                       True") {
		t.Errorf("berth describe cronjob tick:\n%s", desc)
	}
}

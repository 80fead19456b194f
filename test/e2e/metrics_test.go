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

// TestServerMetrics runs `berth server` with its agent and a directory
// source holding a ConfigMap and a pod no node can take, and reads
// /metrics and /readyz?verbose: every family an operator alerts on is
// there, with the source Ready, the node Ready and the pod pending as
// unschedulable.
func TestServerMetrics(t *testing.T) {
	const ip = "127.0.0.8"
	dir := t.TempDir()
	manifests := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\ndata:\n  a: \"1\"\n" +
		"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: nowhere\nspec:\n  nodeSelector:\n    disk: none\n  containers:\n  - name: c\n    image: none\n    command: [\"true\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(manifests), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	t.Cleanup(func() { reapContainers(t, filepath.Join(dataDir, "agent")) })
	s := startServerIn(t, dataDir, "--source", "name=local,"+dir,
		"--agent=true", "--node-name", "watched", "--node-ip", ip,
		"--agent-listen", fmt.Sprintf("%s:%d", ip, freePort(t, ip)))

	var text string
	waitFor(t, 60*time.Second, "the source, the node and the pending pod in /metrics", func() error {
		text = s.get(t, "/metrics")
		got := testtool.ParseMetrics(t, strings.NewReader(text))
		for series, want := range map[string]float64{
			`berth_source_condition{name="local",status="True",type="Ready"}`: 1,
			`berth_source_objects{name="local"}`:                              2,
			`berth_nodes{ready="True"}`:                                       1,
			`berth_scheduler_pending_pods{queue="unschedulable"}`:             1,
		} {
			if got[series] != want {
				return fmt.Errorf("%s = %v, want %v", series, got[series], want)
			}
		}
		return nil
	})
	for _, family := range []string{
		"berth_workqueue_depth gauge",
		"berth_workqueue_adds_total counter",
		"berth_workqueue_retries_total counter",
		"berth_workqueue_queue_duration_seconds histogram",
		"berth_workqueue_work_duration_seconds histogram",
		"berth_workqueue_unfinished_work_seconds gauge",
		"berth_workqueue_longest_running_processor_seconds gauge",
		"berth_controller_reconcile_total counter",
		"berth_controller_reconcile_errors_total counter",
		"berth_scheduler_pending_pods gauge",
		"berth_scheduler_schedule_attempts_total counter",
		"berth_scheduler_scheduling_attempt_duration_seconds histogram",
		"berth_source_condition gauge",
		"berth_source_objects gauge",
		"berth_source_last_successful_sync_timestamp_seconds gauge",
		"berth_source_sync_duration_seconds histogram",
		"berth_store_objects gauge",
		"berth_store_db_total_size_in_bytes gauge",
		"berth_nodes gauge",
	} {
		if !strings.Contains(text, "\n# TYPE "+family+"\n") {
			t.Errorf("/metrics has no %q", family)
		}
	}
	if ready := s.get(t, "/readyz?verbose"); !strings.Contains(ready, "[+]store ok\n") || !strings.Contains(ready, "[+]sources ok\n") {
		t.Errorf("/readyz?verbose:\n%s", ready)
	}
	if t.Failed() {
		t.Log(text)
	}
}

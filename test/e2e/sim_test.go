package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// berth sim with its hollow agents in a process of their own reports the
// control plane's share of CPU and memory beside the whole run's.
func TestSimAgentsInAProcessOfTheirOwn(t *testing.T) {
	stdout, stderr, code := run(t, "sim", "--agents", "process", "--nodes", "20", "--pods", "300", "--replicasets", "3", "--timeout", "50s")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var res map[string]float64
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout %q: %v", stdout, err)
	}
	if res["scheduled"] != 300 || res["running"] != 300 {
		t.Errorf("result %s", stdout)
	}
	cp, all := res["control_plane_peak_rss_mb"], res["peak_rss_mb"]
	if cp <= 0 || all <= cp {
		t.Errorf("peak RSS: control plane %v MiB, the whole run %v: %s", cp, all, stdout)
	}
	if res["control_plane_cpu_seconds"] <= 0 || res["control_plane_cpu_ms_per_pod"] <= 0 || res["cpu_ms_per_pod"] <= 0 {
		t.Errorf("CPU figures missing: %s", stdout)
	}
	if !strings.Contains(stderr, "sim agents:") || !strings.Contains(stderr, "agents ready 20/20, in a process of their own") {
		t.Errorf("progress of the agents' process missing:\n%s", stderr)
	}
}

// berth sim agents loads a real server with hollow nodes: they register,
// stay Ready, and report the pods of a Deployment Running; SIGTERM stops
// them and the command exits 0.
func TestHollowAgentsJoinAServer(t *testing.T) {
	s := startServer(t)
	agents := start(t, "sim", "agents", "--server", s.url,
		"--token-file", filepath.Join(s.dataDir, "node-token"),
		"--ca-file", filepath.Join(s.dataDir, "tls", "ca.crt"),
		"--nodes", "3", "--first", "5", "--node-cpu", "2", "--max-pods", "4")
	waitFor(t, 30*time.Second, "three hollow nodes Ready", func() error {
		list, err := s.getJSON(t, "nodes")
		if err != nil {
			return err
		}
		items, _ := list["items"].([]any)
		var ready []string
		for _, it := range items {
			n, _ := it.(map[string]any)
			conds, _ := field(n, "status.conditions").([]any)
			for _, c := range conds {
				c, _ := c.(map[string]any)
				if c["type"] == "Ready" && c["status"] == "True" {
					ready = append(ready, fmt.Sprint(field(n, "metadata.name")))
				}
			}
		}
		if strings.Join(ready, " ") != "hollow-00005 hollow-00006 hollow-00007" {
			return fmt.Errorf("Ready nodes %v", ready)
		}
		return nil
	})
	s.applyText(t, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: load
spec:
  replicas: 6
  selector:
    matchLabels: {app: load}
  template:
    metadata:
      labels: {app: load}
    spec:
      containers:
      - name: web
        image: web:1.0
        command: ["/bin/web"]
        resources:
          requests: {cpu: 100m}
`)
	waitFor(t, 30*time.Second, "six pods Running on the hollow nodes", func() error {
		pods, err := podsOf(t, s, "load")
		if err != nil {
			return err
		}
		running := 0
		for _, p := range pods {
			node, _ := field(p, "spec.nodeName").(string)
			if field(p, "status.phase") == "Running" && strings.HasPrefix(node, "hollow-0000") {
				running++
			}
		}
		if running != 6 {
			return fmt.Errorf("%d of %d pods Running", running, len(pods))
		}
		return nil
	})
	agents.stop(syscall.SIGTERM, 20*time.Second)
	if agents.err != nil {
		t.Fatalf("berth sim agents: %v\n%s", agents.err, agents.Output())
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/testtool"
)

// runSim runs berth in-process with stderr safe for concurrent writers.
func runSim(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut testtool.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func TestSimCommand(t *testing.T) {
	r := runSim(t, "sim", "--nodes", "10", "--pods", "200", "--replicasets", "2", "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 1 {
		t.Fatalf("stdout has %d lines, want one JSON line:\n%s", len(lines), r.stdout)
	}
	var got map[string]float64
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("stdout is not a JSON object of numbers: %v\n%s", err, r.stdout)
	}
	for _, f := range []string{"nodes", "pods", "scheduled", "running", "schedule_seconds", "pods_per_second", "p50_bind_ms", "p99_bind_ms", "p99_running_ms", "peak_rss_mb"} {
		if _, ok := got[f]; !ok {
			t.Errorf("JSON lacks %q: %s", f, lines[0])
		}
	}
	if got["nodes"] != 10 || got["pods"] != 200 || got["scheduled"] != 200 || got["running"] != 200 {
		t.Errorf("JSON %s", lines[0])
	}
	if !strings.Contains(r.stderr, "bound 200") {
		t.Errorf("no progress on stderr:\n%s", r.stderr)
	}
}

func TestSimCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"sim"},
		{"sim", "--nodes", "5"},
		{"sim", "--pods", "5"},
		{"sim", "--nodes", "0", "--pods", "5"},
		{"sim", "--nodes", "5", "--pods", "5", "--pod-cpu", "lots"},
		{"sim", "--nodes", "5", "--pods", "5", "--store", "etcd"},
		{"sim", "--nodes", "5", "--pods", "5", "--scenario", "chaos"},
		{"sim", "--nodes", "5", "--scenario", "rollout", "--pods", "0"},
		{"sim", "--nodes", "5", "--pods", "5", "extra"},
		{"sim", "--nodes", "5", "--pods", "5", "--agents", "elsewhere"},
		{"sim", "--nodes", "5", "--pods", "5", "--scheduler-scoring-strategy", "Random"},
		{"sim", "agents"},
		{"sim", "agents", "--server", "https://127.0.0.1:1", "--token", "t", "--nodes", "0"},
		{"sim", "agents", "--server", "https://127.0.0.1:1", "--token", "t", "--max-pods", "none"},
		{"sim", "agents", "--server", "https://127.0.0.1:1"},
		{"server", "--scheduler-scoring-strategy", "Random"},
	} {
		if r := runSim(t, args...); r.code != 2 {
			t.Errorf("berth %v: exit %d, want 2\nstderr: %s", args, r.code, r.stderr)
		}
	}
}

func TestSimCommandIncomplete(t *testing.T) {
	// One node of 1 cpu fits 10 pods of 100m: the run times out with at
	// most 10 of 12 scheduled, prints what it has and exits 1.
	r := runSim(t, "sim", "--nodes", "1", "--pods", "12", "--node-cpu", "1", "--timeout", "5s")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", r.code, r.stderr)
	}
	var got map[string]float64
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got["pods"] != 12 || got["scheduled"] > 10 {
		t.Errorf("stdout %s (%v)", r.stdout, err)
	}
}

func TestSimCommandRollout(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "heap.prof")
	r := runSim(t, "sim", "--scenario", "rollout", "--nodes", "8", "--pods", "20", "--timeout", "2m", "--memprofile", profile)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	var got map[string]float64
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout %s: %v", r.stdout, err)
	}
	// 25% of 20 may be unavailable.
	if got["availability_bound"] != 15 || got["min_available"] < 15 || got["rollout_seconds"] <= 0 {
		t.Errorf("JSON %s", r.stdout)
	}
	if fi, err := os.Stat(profile); err != nil || fi.Size() == 0 {
		t.Errorf("heap profile: %v", err)
	}
}

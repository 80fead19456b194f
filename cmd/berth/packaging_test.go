package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestUnitsDoNotRestartOnBadUsage checks that the packaged systemd units
// restart berth on failure but not on bad usage (exit 2): a wrong or
// missing flag in /etc/default/ fails the same way at every start, so
// Restart=on-failure alone would restart it every 5s for ever. The agent
// with no arguments, as /etc/default/berth-agent ships, is such a start.
func TestUnitsDoNotRestartOnBadUsage(t *testing.T) {
	if r := runBerth(t, "", "agent", "--data-dir", filepath.Join(t.TempDir(), "agent")); r.code != exitUsage {
		t.Errorf("berth agent with no --server or manifests: exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	units, err := filepath.Glob(filepath.Join("..", "..", "packaging", "systemd", "*.service"))
	if err != nil || len(units) != 2 {
		t.Fatalf("units: %v %v", units, err)
	}
	for _, u := range units {
		data, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		var prevent []string
		restart := ""
		for _, line := range strings.Split(string(data), "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
			switch k {
			case "Restart":
				restart = v
			case "RestartPreventExitStatus":
				prevent = append(prevent, strings.Fields(v)...)
			}
		}
		if restart != "on-failure" {
			t.Errorf("%s: Restart=%s, want on-failure", u, restart)
		}
		if !slices.Contains(prevent, strconv.Itoa(exitUsage)) {
			t.Errorf("%s: RestartPreventExitStatus=%s lacks %d, bad usage", u, strings.Join(prevent, " "), exitUsage)
		}
	}
}

// TestCompletionListed checks that `berth completion`, whose output the
// packages install and which a `go install` user runs, is in the help.
func TestCompletionListed(t *testing.T) {
	r := runBerth(t, "", "--help")
	if r.code != exitOK || !strings.Contains(r.stdout, "\n  completion ") {
		t.Errorf("berth --help does not list completion: exit %d\n%s", r.code, r.stdout)
	}
	r = runBerth(t, "", "completion", "bash")
	if r.code != exitOK || !strings.Contains(r.stdout, "bash completion") {
		t.Errorf("berth completion bash: exit %d\n%.200s%s", r.code, r.stdout, r.stderr)
	}
}

//go:build linux

package exec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/agent/runtime"
)

func TestCPUQuota(t *testing.T) {
	cases := []struct{ milli, want int64 }{
		{1000, 100000},
		{500, 50000},
		{2500, 250000},
		{1, 1000}, // the kernel's minimum
	}
	for _, tc := range cases {
		if got := cpuQuota(tc.milli); got != tc.want {
			t.Errorf("cpuQuota(%d) = %d, want %d", tc.milli, got, tc.want)
		}
	}
}

func TestCgroupName(t *testing.T) {
	got := cgroupName(runtime.ID{PodUID: "u-1", Name: "web", Attempt: 3})
	if got != "u-1_web_3" {
		t.Fatalf("got %q", got)
	}
}

func TestOOMKilled(t *testing.T) {
	cases := []struct {
		name    string
		version string
		files   map[string]string
		want    bool
	}{
		{"v2 killed", "v2", map[string]string{"memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"}, true},
		{"v2 not killed", "v2", map[string]string{"memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"}, false},
		{"v1 killed", "v1", map[string]string{"memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "memory.failcnt": "9"}, true},
		{"v1 counted none", "v1", map[string]string{"memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", "memory.failcnt": "9"}, false},
		{"v1 old kernel, failures", "v1", map[string]string{"memory.oom_control": "oom_kill_disable 0\nunder_oom 0\n", "memory.failcnt": "9"}, true},
		{"v1 old kernel, none", "v1", map[string]string{"memory.oom_control": "oom_kill_disable 0\nunder_oom 0\n", "memory.failcnt": "0"}, false},
		{"no cgroup", "", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := cgroupPaths{Version: tc.version, Memory: dir, CPU: dir}
			if got := p.oomKilled(); got != tc.want {
				t.Fatalf("oomKilled = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDetectCgroupsWithoutAny(t *testing.T) {
	cg, err := detectCgroups(t.TempDir())
	if err == nil {
		t.Fatal("found cgroups in an empty directory")
	}
	if c := cg.capabilities(); c != (runtime.Capabilities{}) {
		t.Fatalf("capabilities %+v", c)
	}
	p, err := cg.create(runtime.ID{PodUID: "p", Name: "c"}, runtime.Limits{MemoryBytes: 1 << 20})
	if err != nil || p != (cgroupPaths{}) {
		t.Fatalf("create without cgroups = %+v, %v", p, err)
	}
}

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procCPU is the CPU time a process has used, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command may hold spaces; the fields after it start past ')'.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// procRSS is a process's resident set in bytes, from /proc/<pid>/status.
func procRSS(pid int) (int64, error) { return procStatus(pid, "VmRSS") }

// procStatus reads one of the sizes (VmRSS, VmHWM, …) of
// /proc/<pid>/status, in bytes.
func procStatus(pid int, key string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s for pid %d", key, pid)
}

// procPSS is a process's proportional set size in bytes, from
// /proc/<pid>/smaps_rollup.
func procPSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no Pss for pid %d", pid)
}

// shimsOf counts the container shims of an agent's data dir (each is
// this binary started again, with the run's directory in its environment)
// and sums their proportional set sizes: the pages of the binary they
// share are counted once among them, as the machine pays for them.
func shimsOf(dataDir string) (n int, rss int64) {
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(env), "BERTH_EXEC_SHIM="+dataDir) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if r, err := procPSS(pid); err == nil {
			n++
			rss += r
		}
	}
	return n, rss
}

// BenchmarkAgent100Pods binds 100 pods of `sleep` to one agent and
// measures the time until all report Running, then the agent's CPU use
// and memory while they run and nothing changes.
//
//	go test -run '^$' -bench Agent100Pods -benchtime 1x ./test/e2e/
func BenchmarkAgent100Pods(b *testing.B) {
	for range b.N {
		s := startServer(b)
		a := &agent{name: "bench", ip: "127.0.0.7", dataDir: b.TempDir()}
		b.Cleanup(func() { reapContainers(b, a.dataDir) })
		a.args = []string{"agent", "--server", s.url,
			"--token-file", filepath.Join(s.dataDir, "node-token"),
			"--ca-file", filepath.Join(s.dataDir, "tls", "ca.crt"),
			"--node-name", a.name, "--node-ip", a.ip,
			"--listen", fmt.Sprintf("%s:%d", a.ip, freePort(b, a.ip)),
			"--data-dir", a.dataDir, "--capacity", "cpu=64,memory=64Gi,pods=110"}
		a.process = start(b, a.args...)
		waitNodeReady(b, s, a.name, "True")

		var docs []string
		for i := range 100 {
			docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sleep-%03d
  labels: {app: sleep}
spec:
  nodeName: bench
  terminationGracePeriodSeconds: 1
  containers:
  - name: sleep
    image: sleep
    command: [sleep, "100000"]
`, i))
		}
		manifest := filepath.Join(b.TempDir(), "pods.yaml")
		if err := os.WriteFile(manifest, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		begin := time.Now()
		s.mustBerth(b, "apply", "-f", manifest)
		waitFor(b, 60*time.Second, "100 pods Running", func() error {
			list, err := s.getJSON(b, "pods", "-l", "app=sleep")
			if err != nil {
				return err
			}
			running := 0
			for _, it := range list["items"].([]any) {
				if field(it.(map[string]any), "status.phase") == "Running" {
					running++
				}
			}
			if running != 100 {
				return fmt.Errorf("%d Running", running)
			}
			return nil
		})
		b.StopTimer()
		b.ReportMetric(time.Since(begin).Seconds(), "s-to-running")

		// Idle: nothing changes for 30s but the heartbeat and the runs'
		// watchers.
		pid := a.cmd.Process.Pid
		time.Sleep(5 * time.Second) // let the last status writes settle
		cpu0, err := procCPU(pid)
		if err != nil {
			b.Fatal(err)
		}
		const window = 30 * time.Second
		time.Sleep(window)
		cpu1, err := procCPU(pid)
		if err != nil {
			b.Fatal(err)
		}
		rss, err := procRSS(pid)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(100*float64(cpu1-cpu0)/float64(window), "%cpu-idle")
		b.ReportMetric(float64(rss)/(1<<20), "MiB-rss")
		shims, shimRSS := shimsOf(a.dataDir)
		if shims != 100 {
			b.Errorf("%d shims, want one per container", shims)
		}
		b.ReportMetric(float64(shimRSS)/float64(max(shims, 1))/(1<<20), "MiB-pss/shim")
	}
}

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// BenchmarkPodStartup100 binds 100 pods of one cached image to one agent,
// first under --runtime containerd and then under --runtime exec, and
// reports the time from apply to all Running, the p50 and p99 of each
// pod's time from apply to Running (as a watch of the pods sees them)
// and the agent's CPU time over that span. It runs in a
// network namespace of its own, as root. Run in a cpuacct cgroup of its
// own, it also reports the CPU of every process it started (containerd,
// shims, runc and CNI plugins included):
//
//	mkdir /sys/fs/cgroup/cpuacct/bench; echo $$ > /sys/fs/cgroup/cpuacct/bench/tasks
//
//	go test -run '^$' -bench PodStartup100 -benchtime 1x ./test/e2e/
func BenchmarkPodStartup100(b *testing.B) {
	critest.Need(b)
	if !critest.InNetns(b) {
		return
	}
	reg := critest.StartRegistry(b)
	pause := reg.Push(b, "pause:test", critest.PauseImage(b))
	image := reg.Push(b, "sleep:1", critest.BusyboxImage(b, critest.ImageConfig{Cmd: []string{"sleep", "100000"}}))
	for _, rt := range []string{"containerd", "exec"} {
		s := startServer(b)
		a := &agent{name: "bench", ip: "127.0.0.1", dataDir: critest.TempDir(b)}
		if rt == "containerd" {
			critest.CleanUpAfter(b, filepath.Join(a.dataDir, "containerd"))
			reg.WriteHosts(b, filepath.Join(a.dataDir, "containerd", "certs.d"))
		} else {
			b.Cleanup(func() { reapContainers(b, a.dataDir) })
		}
		a.args = []string{"agent", "--server", s.url, "--runtime", rt, "--pause-image", pause, "--pod-cidr", "198.18.9.0/24", "--pod-network", "none",
			"--token-file", filepath.Join(s.dataDir, "node-token"),
			"--ca-file", filepath.Join(s.dataDir, "tls", "ca.crt"),
			"--node-name", a.name, "--node-ip", a.ip,
			"--listen", fmt.Sprintf("%s:%d", a.ip, freePort(b, a.ip)),
			"--data-dir", a.dataDir, "--capacity", "cpu=64,memory=64Gi,pods=110"}
		a.process = start(b, a.args...)
		waitNodeReady(b, s, a.name, "True")
		pods := func(prefix string, n int) string {
			var docs []string
			for i := range n {
				docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s-%03d
  labels: {app: %[1]s}
spec:
  nodeName: bench
  terminationGracePeriodSeconds: 1
  containers:
  - name: sleep
    image: %[3]s
    imagePullPolicy: IfNotPresent
    command: [sleep, "100000"]
`, prefix, i, image))
			}
			path := filepath.Join(b.TempDir(), prefix+".yaml")
			if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
				b.Fatal(err)
			}
			return path
		}
		// One pod first, so the image is cached.
		s.mustBerth(b, "apply", "-f", pods("warm", 1))
		waitRunning(b, s, "warm", 1, "the warm-up pod")

		manifest := pods("sleep", 100)
		pid := a.cmd.Process.Pid
		cpu0, err := procCPU(pid)
		if err != nil {
			b.Fatal(err)
		}
		// The pods are watched, not listed over and over: a poll of 100
		// pods by a new berth process every few milliseconds took a good
		// share of the two cores the pods start on.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		watch, err := s.client(b).Watch(ctx, api.MustLookupResource("pods"), "default", client.WatchOptions{ListOptions: client.ListOptions{LabelSelector: "app=sleep"}})
		if err != nil {
			b.Fatal(err)
		}
		group0, _ := critest.CgroupCPU()
		begin := time.Now()
		s.mustBerth(b, "apply", "-f", manifest)
		seen := map[string]time.Duration{}
		for len(seen) < 100 {
			ev, err := watch.Next(ctx)
			if err != nil {
				b.Fatalf("%d pods Running, then the watch: %v", len(seen), err)
			}
			pod, ok := ev.Object.(*api.Pod)
			if !ok || pod.Status.Phase != api.PodRunning {
				continue
			}
			if _, done := seen[pod.Name]; !done {
				seen[pod.Name] = time.Since(begin)
			}
		}
		watch.Stop()
		cancel()
		total := time.Since(begin)
		cpu1, err := procCPU(pid)
		if err != nil {
			b.Fatal(err)
		}
		group := ""
		if group1, ok := critest.CgroupCPU(); ok {
			group = fmt.Sprintf("; CPU of the cgroup (server, agent, runtime) %.1fs", (group1 - group0).Seconds())
		}
		var lat []time.Duration
		for _, d := range seen {
			lat = append(lat, d)
		}
		slices.Sort(lat)
		b.Logf("%s: 100 pods Running in %.2fs; startup p50 %.2fs p99 %.2fs; agent CPU %.2fs (%.0f%% of a core over the span)%s",
			rt, total.Seconds(), lat[49].Seconds(), lat[98].Seconds(), (cpu1 - cpu0).Seconds(), 100*float64(cpu1-cpu0)/float64(total), group)
		a.stop(syscall.SIGTERM, 30*time.Second)
		s.stop(syscall.SIGTERM, 10*time.Second)
	}
}

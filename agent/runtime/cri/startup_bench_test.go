package cri_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/cri/critest"
)

// startupPods is how many pods the startup benchmarks start at once.
const startupPods = 100

// BenchmarkCRIStartup100 is the baseline of the agent's 100-pod startup
// (BenchmarkPodStartup100 in test/e2e): the same 100 sandboxes and
// containers of a cached image started on containerd by bare CRI calls
// through cri-client (RunPodSandbox, CreateContainer, StartContainer), all
// at once ($BERTH_BENCH_INFLIGHT at a time if set), with no agent. It reports each call's p50 and p99 and each
// pod's time from the first call to its container started.
//
//	go test -run '^$' -bench CRIStartup100 -benchtime 1x ./agent/runtime/cri/
func BenchmarkCRIStartup100(b *testing.B) {
	env, image, ok := startupEnv(b)
	if !ok {
		return
	}
	ctx := context.Background()
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(env.Containerd.Endpoint()).WithConnectionTimeout(time.Minute).WithTracerProvider(nil).Build(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close(ctx)
	startPods(b, "bare CRI", func(i int, timed timer) error {
		uid := fmt.Sprintf("bench-uid-%03d", i)
		sc := &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("bench-%03d", i), Uid: uid, Namespace: "default"},
			Hostname:     fmt.Sprintf("bench-%03d", i),
			LogDirectory: env.Dir + "/logs/" + uid,
			Labels:       map[string]string{"dev.berth.managed": "true", "io.kubernetes.pod.uid": uid},
		}
		var sid, cid string
		err := timed("RunPodSandbox", func() (err error) { sid, err = rs.RunPodSandbox(ctx, sc, ""); return })
		if err == nil {
			cc := &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
				Image:    &runtimeapi.ImageSpec{Image: image},
				Command:  []string{"sleep", "100000"},
				LogPath:  "sleep/0.log",
				Labels:   map[string]string{"dev.berth.managed": "true"},
			}
			err = timed("CreateContainer", func() (err error) { cid, err = rs.CreateContainer(ctx, sid, cc, sc); return })
		}
		if err == nil {
			err = timed("StartContainer", func() error { return rs.StartContainer(ctx, cid) })
		}
		return err
	})
}

// BenchmarkCrictlStartup100 starts the same 100 pods as
// BenchmarkCRIStartup100 with cri-tools' crictl, the runtime's own
// command-line client (`crictl runp`, `create`, `start`, a process each),
// all at once: the runtime's figure as its own tools see it, each call
// paying for a crictl process too. It needs crictl on PATH.
//
//	go test -run '^$' -bench CrictlStartup100 -benchtime 1x ./agent/runtime/cri/
func BenchmarkCrictlStartup100(b *testing.B) {
	crictl, err := exec.LookPath("crictl")
	if err != nil {
		b.Skip("no crictl on PATH")
	}
	env, image, ok := startupEnv(b)
	if !ok {
		return
	}
	dir := b.TempDir()
	endpoint := env.Containerd.Endpoint()
	run := func(args ...string) (string, error) {
		// crictl's --timeout bounds each call: a sandbox takes far
		// longer than its default 2s when 100 start at once.
		cmd := exec.Command(crictl, append([]string{"--runtime-endpoint", endpoint, "--image-endpoint", endpoint, "--timeout", "10m"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("crictl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
		}
		return strings.TrimSpace(string(out)), nil
	}
	writeJSON := func(name string, v any) string {
		b2, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b2, 0o644); err != nil {
			b.Fatal(err)
		}
		return path
	}
	ctrConfig := writeJSON("container.json", &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  []string{"sleep", "100000"},
		LogPath:  "sleep/0.log",
		Labels:   map[string]string{"dev.berth.managed": "true"},
	})
	startPods(b, "crictl", func(i int, timed timer) error {
		uid := fmt.Sprintf("bench-uid-%03d", i)
		podConfig := writeJSON(uid+".json", &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("bench-%03d", i), Uid: uid, Namespace: "default"},
			Hostname:     fmt.Sprintf("bench-%03d", i),
			LogDirectory: env.Dir + "/logs/" + uid,
			Labels:       map[string]string{"dev.berth.managed": "true", "io.kubernetes.pod.uid": uid},
		})
		var sid, cid string
		err := timed("RunPodSandbox", func() (err error) { sid, err = run("runp", podConfig); return })
		if err == nil {
			err = timed("CreateContainer", func() (err error) { cid, err = run("create", "--no-pull", sid, ctrConfig, podConfig); return })
		}
		if err == nil {
			err = timed("StartContainer", func() (err error) { _, err = run("start", cid); return })
		}
		return err
	})
}

// BenchmarkRuntimeStartup100 starts the same 100 pods as
// BenchmarkCRIStartup100 through berth's CRI runtime (Runtime.Start, as the
// agent's pod workers call it), all at once.
//
//	go test -run '^$' -bench RuntimeStartup100 -benchtime 1x ./agent/runtime/cri/
func BenchmarkRuntimeStartup100(b *testing.B) {
	env, image, ok := startupEnv(b)
	if !ok {
		return
	}
	ctx := context.Background()
	r, err := cri.New(ctx, cri.Options{Endpoint: env.Containerd.Endpoint()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	startPods(b, "berth's CRI runtime", func(i int, timed timer) error {
		pod := &runtime.Pod{UID: fmt.Sprintf("bench-uid-%03d", i), Namespace: "default", Name: fmt.Sprintf("bench-%03d", i)}
		pod.Hostname, pod.LogDir = pod.Name, env.Dir+"/logs/"+pod.UID
		c := &runtime.Container{
			ID:    runtime.ID{PodUID: pod.UID, Name: "sleep"},
			Image: &runtime.Image{Ref: image, PullPolicy: cri.PullIfNotPresent, Command: []string{"sleep", "100000"}},
			Pod:   pod,
		}
		return timed("Start", func() error { _, err := r.Start(ctx, c); return err })
	})
}

// timer runs f and records how long it took as a call of name.
type timer func(name string, f func() error) error

// startPods runs start for each of the startupPods pods,
// startupInflight() at a time, and reports how long each pod and each
// timed call took and the CPU of the benchmark's cgroup.
func startPods(b *testing.B, what string, start func(i int, timed timer) error) {
	var mu sync.Mutex
	calls := map[string][]time.Duration{}
	timed := func(name string, f func() error) error {
		t0 := time.Now()
		err := f()
		mu.Lock()
		calls[name] = append(calls[name], time.Since(t0))
		mu.Unlock()
		return err
	}
	lat := make([]time.Duration, startupPods)
	errs := make([]error, startupPods)
	slots := make(chan struct{}, startupInflight())
	cpu0, _ := critest.CgroupCPU()
	begin := time.Now()
	var wg sync.WaitGroup
	for i := range startupPods {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = start(i, timed)
			lat[i] = time.Since(begin)
		})
	}
	wg.Wait()
	total := time.Since(begin)
	cpu1, _ := critest.CgroupCPU()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	reportStartup(b, what, total, cpu1-cpu0, lat, calls)
}

// startupInflight is how many pods the startup benchmarks start at a
// time: $BERTH_BENCH_INFLIGHT, else all.
func startupInflight() int {
	if n, err := strconv.Atoi(os.Getenv("BERTH_BENCH_INFLIGHT")); err == nil && n > 0 {
		return n
	}
	return startupPods
}

// startupEnv is a containerd of the benchmark's own, in a network
// namespace, with the image of the pods pulled.
func startupEnv(b *testing.B) (*critest.Env, string, bool) {
	critest.Need(b)
	if !critest.InNetns(b) {
		return nil, "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	b.Cleanup(cancel)
	env := critest.Start(b, ctx)
	image := env.Registry.Push(b, "sleep:1", critest.BusyboxImage(b, critest.ImageConfig{Cmd: []string{"sleep", "100000"}}))
	r, err := cri.New(ctx, cri.Options{Endpoint: env.Containerd.Endpoint()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for _, ref := range []string{image, env.PauseImage} {
		if _, err := r.PullImage(ctx, &runtime.Container{Image: &runtime.Image{Ref: ref, PullPolicy: cri.PullIfNotPresent}}); err != nil {
			b.Fatal(err)
		}
	}
	return env, image, true
}

func reportStartup(b *testing.B, what string, total, cpu time.Duration, lat []time.Duration, calls map[string][]time.Duration) {
	pct := func(d []time.Duration, p int) time.Duration {
		slices.Sort(d)
		return d[(len(d)*p+99)/100-1]
	}
	var parts []string
	for _, name := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "Start"} {
		if d := calls[name]; len(d) > 0 {
			parts = append(parts, fmt.Sprintf("%s p50 %.2fs p99 %.2fs", name, pct(d, 50).Seconds(), pct(d, 99).Seconds()))
		}
	}
	if cpu > 0 {
		parts = append(parts, fmt.Sprintf("CPU of the cgroup %.1fs", cpu.Seconds()))
	}
	b.Logf("%s (%d at a time): %d pods started in %.2fs; per pod p50 %.2fs p99 %.2fs; %s", what, startupInflight(), len(lat), total.Seconds(),
		pct(lat, 50).Seconds(), pct(lat, 99).Seconds(), strings.Join(parts, "; "))
}

package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// startControlPlane runs a control plane on a memory store for the test.
func startControlPlane(t *testing.T) *controlplane.Server {
	t.Helper()
	cp, err := controlplane.New(context.Background(), controlplane.Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", Store: controlplane.StoreMemory,
	})
	if err != nil {
		t.Fatal(err)
	}
	testtool.Run(t, "control plane", cp.Run)
	return cp
}

func fleetOptions(cp *controlplane.Server, nodes, first int) FleetOptions {
	creds := cp.Credentials()
	return FleetOptions{
		Server: "https://" + cp.Addr().String(), CAPEM: creds.CAPEM, NodeToken: creds.NodeToken,
		Nodes: nodes, First: first,
		Capacity: NodeCapacity(resource.MustParse("2"), resource.MustParse("4Gi"), 20),
	}
}

// A fleet speaking the protocol on pipes: "ready" once its nodes are
// registered, a usage line for each request, and a last one when its
// input ends; its nodes take pods and report them Running meanwhile.
func TestServeFleet(t *testing.T) {
	cp := startControlPlane(t)
	st := cp.Store()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- ServeFleet(context.Background(), fleetOptions(cp, 3, 7), inR, outW)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the fleet's output ended: %v", lines.Err())
		}
		return lines.Text()
	}
	if l := next(); l != readyLine {
		t.Fatalf("first line %q, want %q", l, readyLine)
	}
	nodes, _, err := st.List(nodeKind, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.GetName())
	}
	slices.Sort(names)
	if want := []string{"hollow-00007", "hollow-00008", "hollow-00009"}; !slices.Equal(names, want) {
		t.Fatalf("nodes %v, want %v", names, want)
	}
	cpu := resource.MustParse("2")
	if got := nodes[0].(*api.Node).Status.Allocatable[api.ResourceCPU]; got.Cmp(cpu) != 0 {
		t.Errorf("allocatable cpu %s, want 2", got.String())
	}

	// A pod bound to one of them is reported Running.
	pod := makePod(0, metav1.OwnerReference{Name: "solo"}, &Options{PodCPU: resource.MustParse("100m"), PodMemory: resource.MustParse("64Mi")})
	pod.OwnerReferences = nil
	pod.Spec.NodeName = "hollow-00008"
	if _, err := st.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "the pod Running", func() error {
		p, err := st.Get(podKind, pod.Namespace, pod.Name)
		if err != nil {
			return err
		}
		if phase := p.(*api.Pod).Status.Phase; phase != api.PodRunning {
			return fmt.Errorf("phase %q", phase)
		}
		return nil
	})

	if _, err := io.WriteString(inW, usageRequest+"\n"); err != nil {
		t.Fatal(err)
	}
	u, err := parseUsage(next())
	if err != nil {
		t.Fatal(err)
	}
	if u.cpu <= 0 || u.peakRSSMB <= 0 || u.errors != 0 {
		t.Errorf("usage %+v", u)
	}
	inW.Close()
	last, err := parseUsage(next())
	if err != nil {
		t.Fatal(err)
	}
	if last.cpu < u.cpu {
		t.Errorf("last usage %+v before %+v", last, u)
	}
	if err := <-served; err != nil {
		t.Fatalf("ServeFleet: %v", err)
	}
	if lines.Scan() {
		t.Errorf("more output after the last usage: %q", lines.Text())
	}
}

// A fleet process that cannot start its agents ends, and the parent
// says so rather than waiting for "ready".
func TestFleetProcessFailsToStart(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "echo 'sim agents: cannot join' >&2\nexit 1\n")
	var stderr strings.Builder
	_, err := startFleetProcess(context.Background(), []string{script}, FleetOptions{Nodes: 1}, dir, &stderr)
	if err == nil || !strings.Contains(err.Error(), "ended before its agents were ready") {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(stderr.String(), "cannot join") {
		t.Errorf("the child's stderr was not passed on: %q", stderr.String())
	}
}

func TestParseUsage(t *testing.T) {
	u, err := parseUsage("usage 1500000000 2048 3")
	if err != nil || u.cpu != 1500*time.Millisecond || u.peakRSSMB != 2 || u.errors != 3 {
		t.Errorf("usage %+v, %v", u, err)
	}
	for _, bad := range []string{"", "ready", "usage 1 2", "usage 1 2 3 4", "usage -1 2 3", "usage a b c", "cpu 1 2 3"} {
		if _, err := parseUsage(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// Args name every option a child needs, in the flags of `berth sim
// agents`.
func TestFleetArgs(t *testing.T) {
	o := FleetOptions{
		Server: "https://127.0.0.1:6443", Nodes: 5, First: 10, Mix: true, StartConcurrency: 8,
		Capacity: NodeCapacity(resource.MustParse("32"), resource.MustParse("128Gi"), 110),
	}
	got := strings.Join(o.Args("ca.crt", "token"), " ")
	want := "--server https://127.0.0.1:6443 --ca-file ca.crt --token-file token --nodes 5 --first 10 --node-cpu 32 --node-memory 128Gi --max-pods 110 --mix --start-concurrency 8"
	if got != want {
		t.Errorf("args\n got %s\nwant %s", got, want)
	}
}

// writeScript writes an executable shell script standing in for a fleet
// process.
func writeScript(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "agents")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// The parent's side of the protocol: a usage request is answered, and
// stop closes the child's stdin and takes its last report.
func TestFleetProcessUsageAndStop(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, `echo ready
while read line; do
	[ "$line" = usage ] && echo "usage 1000 2048 0"
done
echo "usage 2000 4096 1"
`)
	p, err := startFleetProcess(context.Background(), []string{script}, FleetOptions{Nodes: 1}, dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	u, err := p.usage()
	if err != nil || u.cpu != 1000 || u.peakRSSMB != 2 || u.errors != 0 {
		t.Fatalf("usage %+v, %v", u, err)
	}
	last, err := p.stop()
	if err != nil || last.cpu != 2000 || last.peakRSSMB != 4 || last.errors != 1 {
		t.Fatalf("last usage %+v, %v", last, err)
	}
	if _, err := p.usage(); err == nil {
		t.Error("a usage request after stop did not fail")
	}

	// The run's figures from it: both processes' CPU, the two peaks added.
	f := &runFleet{child: p, log: t.Logf, stopped: true, last: last}
	res := &Result{}
	f.memory(res)
	if res.ControlPlanePeakRSSMB <= 0 || res.PeakRSSMB != round(res.ControlPlanePeakRSSMB+4, 1) {
		t.Errorf("peak RSS %v, control plane %v", res.PeakRSSMB, res.ControlPlanePeakRSSMB)
	}
	// Without the child's last report the whole is unknown, not the
	// control plane's alone under its name.
	f.last = fleetUsage{}
	res = &Result{}
	f.memory(res)
	if res.PeakRSSMB != 0 || res.ControlPlanePeakRSSMB <= 0 {
		t.Errorf("without a report: peak RSS %v, control plane %v", res.PeakRSSMB, res.ControlPlanePeakRSSMB)
	}
}

// A child that does not answer, or does not end once its stdin is
// closed, is killed.
func TestFleetProcessStopKillsAHangingChild(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "echo ready\nexec sleep 60\n")
	p, err := startFleetProcess(context.Background(), []string{script}, FleetOptions{Nodes: 1}, dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p.stopTimeout = 100 * time.Millisecond
	if _, err := p.usage(); err == nil {
		t.Error("a child that never answers gave its usage")
	}
	if _, err := p.stop(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("stop: %v, want the child killed", err)
	}
}

// The run's CPU adds the agents' only when both readings have them.
func TestResultCPUWithTheAgentsApart(t *testing.T) {
	tr := &tracker{created: []int64{1}, bound: []int64{2}, running: []int64{3}}
	tr.cpuStart = cpuTime{process: time.Second, agents: time.Second, separate: true}
	tr.cpuBound = cpuTime{process: 3 * time.Second, agents: 2 * time.Second, separate: true}
	res := tr.result(1, 1)
	if res.CPUSeconds != 3 || res.ControlPlaneCPUSeconds != 2 || res.ControlPlaneCPUMsPerPod != 2000 {
		t.Errorf("result %+v", res)
	}
	tr.cpuBound.agentsMissing = true
	res = tr.result(1, 1)
	if res.CPUSeconds != 0 || res.CPUMsPerPod != 0 || res.ControlPlaneCPUSeconds != 2 {
		t.Errorf("with the agents' reading missing: %+v", res)
	}
}

// A run too small to use a hundredth of a CPU second still has
// cpu_seconds in its JSON line, as the help shows it.
func TestResultJSONKeepsZeroCPU(t *testing.T) {
	tr := &tracker{created: []int64{1}, bound: []int64{2}, running: []int64{3}}
	tr.cpuStart = cpuTime{process: time.Second}
	tr.cpuBound = cpuTime{process: time.Second + time.Millisecond}
	res := tr.result(1, 1)
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"bound_seconds":0,`, `"cpu_seconds":0,`, `"cpu_ms_per_pod":1`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON line lacks %s: %s", want, data)
		}
	}
}

// TestStartRetrying: an agent whose join or registration timed out tries
// again after startRetryDelay, on the fleet's clock; another error, or
// the run ending, ends it.
func TestStartRetrying(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Now())
	calls := 0
	timedOut := fmt.Errorf("hollow-1: register: %w", context.DeadlineExceeded)
	done := make(chan error, 1)
	go func() {
		done <- startRetrying(context.Background(), clk, func(context.Context) error {
			if calls++; calls < 3 {
				return timedOut
			}
			return nil
		})
	}()
	for range 2 {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(startRetryDelay)
	}
	if err := <-done; err != nil || calls != 3 {
		t.Fatalf("after two timeouts: %v, %d calls", err, calls)
	}

	refused := errors.New("hollow-1: join: forbidden")
	calls = 0
	if err := startRetrying(context.Background(), clk, func(context.Context) error { calls++; return refused }); err != refused || calls != 1 {
		t.Errorf("a refusal: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := startRetrying(ctx, clk, func(context.Context) error { return timedOut }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the run ending: %v", err)
	}
}

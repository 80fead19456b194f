package pods

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

func waitingReason(want, msg string) func(api.PodStatus) error {
	return func(st api.PodStatus) error {
		cs, err := containerStatusOf(st, "app")
		if err != nil {
			return err
		}
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != want || !strings.Contains(cs.State.Waiting.Message, msg) {
			return fmt.Errorf("state %+v, want waiting %s %q", cs.State, want, msg)
		}
		return nil
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	h := newTestHarness(t)
	h.m.Sync(workerPod("u1", "web", api.RestartPolicyAlways, "app"))

	run0 := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	h.waitStatus("u1", "running", func(st api.PodStatus) error {
		if st.Phase != api.PodRunning || podCondition(st, api.PodReady).Status != api.ConditionTrue {
			return fmt.Errorf("phase %s ready %s", st.Phase, podCondition(st, api.PodReady).Status)
		}
		return nil
	})
	if err := h.rt.exit(run0.ID, 1, 0); err != nil {
		t.Fatal(err)
	}
	st := h.waitStatus("u1", "back-off 10s", waitingReason(reasonCrashLoopBackOff, "back-off 10s restarting failed container=app pod=web_default(u1)"))
	cs, _ := containerStatusOf(st, "app")
	if cs.RestartCount != 0 || cs.LastState.Terminated == nil || cs.LastState.Terminated.ExitCode != 1 {
		t.Errorf("after first crash: restartCount %d lastState %+v", cs.RestartCount, cs.LastState)
	}
	if st.Phase != api.PodRunning || podCondition(st, api.PodReady).Status != api.ConditionFalse {
		t.Errorf("crash looping pod: phase %s ready %s", st.Phase, podCondition(st, api.PodReady).Status)
	}

	h.step(9 * time.Second)
	h.step(time.Second)
	run1 := h.waitRun(rid("u1", "app", 1), runtime.StateRunning)
	exited0, _ := h.rt.run(run0.ID)
	if d := run1.StartedAt.Sub(exited0.FinishedAt); d != 10*time.Second {
		t.Errorf("first restart after %s, want 10s", d)
	}
	h.waitStatus("u1", "restart count 1", func(st api.PodStatus) error {
		cs, _ := containerStatusOf(st, "app")
		if cs.RestartCount != 1 || cs.State.Running == nil || cs.ContainerID != "berth-exec://u1/app/1" {
			return fmt.Errorf("status %+v", cs)
		}
		return nil
	})

	if err := h.rt.exit(run1.ID, 2, 0); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("u1", "back-off 20s", waitingReason(reasonCrashLoopBackOff, "back-off 20s"))
	h.step(19 * time.Second)
	h.step(time.Second)
	run2 := h.waitRun(rid("u1", "app", 2), runtime.StateRunning)
	exited1, _ := h.rt.run(run1.ID)
	if d := run2.StartedAt.Sub(exited1.FinishedAt); d != 20*time.Second {
		t.Errorf("second restart after %s, want 20s", d)
	}
	// The last exited run stays for `logs --previous`, older ones go.
	testtool.WaitFor(t, 5*time.Second, "first run removed", func() error {
		if _, ok := h.rt.run(run0.ID); ok {
			return fmt.Errorf("%s still in the runtime", run0.ID)
		}
		return nil
	})
	if _, ok := h.rt.run(run1.ID); !ok {
		t.Errorf("previous run %s was removed", run1.ID)
	}
	if id, err := h.m.ContainerRun("default", "web", "", true); err != nil || id != run1.ID {
		t.Errorf("ContainerRun previous = %v, %v; want %s", id, err, run1.ID)
	}
	if id, err := h.m.ContainerRun("default", "web", "app", false); err != nil || id != run2.ID {
		t.Errorf("ContainerRun = %v, %v; want %s", id, err, run2.ID)
	}

	// A run that lasted 10 minutes resets the back-off.
	h.step(10 * time.Minute)
	if err := h.rt.exit(run2.ID, 1, 0); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("u1", "back-off reset to 10s", waitingReason(reasonCrashLoopBackOff, "back-off 10s"))
	h.step(10 * time.Second)
	h.waitRun(rid("u1", "app", 3), runtime.StateRunning)
}

func TestRestartPolicy(t *testing.T) {
	tests := []struct {
		policy      api.RestartPolicy
		exitCode    int
		wantRestart bool
		wantPhase   api.PodPhase
	}{
		{api.RestartPolicyAlways, 0, true, api.PodRunning},
		{api.RestartPolicyOnFailure, 0, false, api.PodSucceeded},
		{api.RestartPolicyOnFailure, 3, true, api.PodRunning},
		{api.RestartPolicyNever, 0, false, api.PodSucceeded},
		{api.RestartPolicyNever, 3, false, api.PodFailed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s exit %d", tt.policy, tt.exitCode), func(t *testing.T) {
			h := newTestHarness(t)
			h.m.Sync(workerPod("u1", "job", tt.policy, "app"))
			run0 := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
			if err := h.rt.exit(run0.ID, tt.exitCode, 0); err != nil {
				t.Fatal(err)
			}
			st := h.waitStatus("u1", "phase "+string(tt.wantPhase), func(st api.PodStatus) error {
				cs, _ := containerStatusOf(st, "app")
				if st.Phase != tt.wantPhase || cs.State.Running != nil {
					return fmt.Errorf("phase %s state %+v", st.Phase, cs.State)
				}
				if !tt.wantRestart && cs.State.Terminated == nil {
					return fmt.Errorf("state %+v, want terminated", cs.State)
				}
				return nil
			})
			if !tt.wantRestart {
				cs, _ := containerStatusOf(st, "app")
				if cs.State.Terminated.ExitCode != int32(tt.exitCode) {
					t.Errorf("terminated exit code %d", cs.State.Terminated.ExitCode)
				}
			}
			h.step(10 * time.Second)
			if tt.wantRestart {
				h.waitRun(rid("u1", "app", 1), runtime.StateRunning)
				return
			}
			h.step(time.Hour)
			h.step(0) // the worker has looked again
			if n := len(h.rt.startsOf("u1")); n != 1 {
				t.Errorf("%d starts, want 1", n)
			}
		})
	}
}

// TestStartErrorIsAnExit: a container whose process cannot be started
// ends terminated, reason StartError, exit code 128, as the kubelet
// reports it, and its restart policy answers: Never fails the pod and
// starts nothing more, Always backs off and tries again.
func TestStartErrorIsAnExit(t *testing.T) {
	startError := func(cs api.ContainerStatus) error {
		if t := cs.State.Terminated; t == nil || t.Reason != "StartError" || t.ExitCode != 128 || !strings.Contains(t.Message, "no such file") {
			return fmt.Errorf("state %+v, want terminated StartError 128", cs.State)
		}
		return nil
	}
	t.Run("Never", func(t *testing.T) {
		h := newTestHarness(t)
		p := workerPod("u1", "nocmd", api.RestartPolicyNever, "app")
		p.Spec.Containers[0].Command = []string{missingExecutable}
		h.m.Sync(p)
		h.waitStatus("u1", "failed with StartError", func(st api.PodStatus) error {
			cs, err := containerStatusOf(st, "app")
			if err != nil {
				return err
			}
			if st.Phase != api.PodFailed {
				return fmt.Errorf("phase %s", st.Phase)
			}
			return startError(cs)
		})
		h.step(time.Hour)
		h.step(0)
		if n := len(h.rt.startsOf("u1")); n != 1 {
			t.Errorf("%d starts, want 1", n)
		}
	})
	t.Run("Always", func(t *testing.T) {
		h := newTestHarness(t)
		p := workerPod("u1", "nocmd", api.RestartPolicyAlways, "app")
		p.Spec.Containers[0].Command = []string{missingExecutable}
		h.m.Sync(p)
		h.waitStatus("u1", "backing off after a StartError", func(st api.PodStatus) error {
			cs, err := containerStatusOf(st, "app")
			if err != nil {
				return err
			}
			if w := cs.State.Waiting; w == nil || w.Reason != reasonCrashLoopBackOff {
				return fmt.Errorf("state %+v, want waiting CrashLoopBackOff", cs.State)
			}
			return startError(api.ContainerStatus{State: cs.LastState})
		})
		h.step(10 * time.Second)
		testtool.WaitFor(t, 5*time.Second, "a second attempt", func() error {
			if n := len(h.rt.startsOf("u1")); n != 2 {
				return fmt.Errorf("%d starts", n)
			}
			return nil
		})
	})
}

func initPod(policy api.RestartPolicy) *api.Pod {
	p := workerPod("u1", "init", policy, "app")
	p.Spec.InitContainers = []api.Container{
		{Name: "first", Image: "busybox", Command: []string{"migrate"}},
		{Name: "second", Image: "busybox", Command: []string{"seed"}},
	}
	return p
}

func TestInitContainersRunInOrder(t *testing.T) {
	h := newTestHarness(t)
	h.m.Sync(initPod(api.RestartPolicyAlways))
	first := h.waitRun(rid("u1", "first", 0), runtime.StateRunning)
	st := h.waitStatus("u1", "initializing", func(st api.PodStatus) error {
		if podCondition(st, api.PodInitialized).Status != api.ConditionFalse || st.Phase != api.PodPending {
			return fmt.Errorf("phase %s initialized %s", st.Phase, podCondition(st, api.PodInitialized).Status)
		}
		return nil
	})
	if cs, _ := containerStatusOf(st, "app"); cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonPodInitializing {
		t.Errorf("app while initializing: %+v", cs.State)
	}
	if n := len(h.rt.startsOf("u1")); n != 1 {
		t.Fatalf("%d starts while the first init container runs, want 1", n)
	}
	// A failed init container restarts (policy Always → on failure).
	h.rt.exit(first.ID, 1, 0)
	h.waitStatus("u1", "init back-off", func(st api.PodStatus) error {
		cs, _ := containerStatusOf(st, "first")
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCrashLoopBackOff {
			return fmt.Errorf("first: %+v", cs.State)
		}
		return nil
	})
	h.step(10 * time.Second)
	first1 := h.waitRun(rid("u1", "first", 1), runtime.StateRunning)
	h.rt.exit(first1.ID, 0, 0)
	second := h.waitRun(rid("u1", "second", 0), runtime.StateRunning)
	if _, ok := h.rt.run(rid("u1", "app", 0)); ok {
		t.Fatal("app started before the second init container ended")
	}
	h.rt.exit(second.ID, 0, 0)
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	h.waitStatus("u1", "initialized and running", func(st api.PodStatus) error {
		if podCondition(st, api.PodInitialized).Status != api.ConditionTrue || st.Phase != api.PodRunning {
			return fmt.Errorf("phase %s initialized %s", st.Phase, podCondition(st, api.PodInitialized).Status)
		}
		cs, _ := containerStatusOf(st, "second")
		if cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
			return fmt.Errorf("second: %+v", cs.State)
		}
		return nil
	})
}

func TestInitContainerFailureWithNeverFailsThePod(t *testing.T) {
	h := newTestHarness(t)
	h.m.Sync(initPod(api.RestartPolicyNever))
	first := h.waitRun(rid("u1", "first", 0), runtime.StateRunning)
	h.rt.exit(first.ID, 2, 0)
	h.waitStatus("u1", "failed", func(st api.PodStatus) error {
		if st.Phase != api.PodFailed {
			return fmt.Errorf("phase %s", st.Phase)
		}
		return nil
	})
	h.step(time.Hour)
	h.step(0)
	if n := len(h.rt.startsOf("u1")); n != 1 {
		t.Errorf("%d starts, want only the failed init container", n)
	}
}

func execProbe(cmd string, period, failures int32) *api.Probe {
	return &api.Probe{ProbeHandler: api.ProbeHandler{Exec: &api.ExecAction{Command: []string{cmd}}},
		PeriodSeconds: period, FailureThreshold: failures}
}

func TestLivenessFailureRestarts(t *testing.T) {
	h := newTestHarness(t)
	healthy := true
	h.rt.setExec(func(_ runtime.ID, argv []string) ([]byte, int, error) {
		h.rt.mu.Lock()
		ok := healthy
		h.rt.mu.Unlock()
		if argv[0] == "alive" && !ok {
			return []byte("dead"), 1, nil
		}
		return nil, 0, nil
	})
	p := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	p.Spec.Containers[0].LivenessProbe = execProbe("alive", 10, 3)
	p.Spec.Containers[0].LivenessProbe.TerminationGracePeriodSeconds = ptr(int64(5))
	p.Spec.Containers[0].Lifecycle = &api.Lifecycle{PreStop: &api.LifecycleHandler{Exec: &api.ExecAction{Command: []string{"drain"}}}}
	h.m.Sync(p)
	run0 := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	h.step(10 * time.Second)
	testtool.WaitFor(t, 5*time.Second, "a liveness probe", func() error {
		if n := len(h.rt.execsOf(run0.ID)); n < 2 {
			return fmt.Errorf("%d probes", n)
		}
		return nil
	})
	h.rt.mu.Lock()
	healthy = false
	h.rt.mu.Unlock()
	for range 2 {
		h.step(10 * time.Second)
	}
	h.step(0)
	if st, _ := h.rt.run(run0.ID); st.State != runtime.StateRunning {
		t.Fatalf("killed after 2 failures, threshold is 3")
	}
	h.step(10 * time.Second)
	h.waitRun(run0.ID, runtime.StateExited)
	if stops := h.rt.stopsOf(run0.ID); len(stops) != 1 || stops[0].grace != 5*time.Second {
		t.Errorf("stops %+v, want one with the probe's 5s grace", stops)
	}
	// The preStop hook ran before the stop, as the kubelet runs it.
	if execs := h.rt.execsOf(run0.ID); len(execs) == 0 || execs[len(execs)-1].argv[0] != "drain" {
		t.Errorf("execs %+v: want the preStop hook last", execs)
	}
	h.waitStatus("u1", "back-off after liveness kill", waitingReason(reasonCrashLoopBackOff, "back-off 10s"))
	h.step(10 * time.Second)
	h.waitRun(rid("u1", "app", 1), runtime.StateRunning)
	h.waitStatus("u1", "restart counted", func(st api.PodStatus) error {
		cs, _ := containerStatusOf(st, "app")
		if cs.RestartCount != 1 || cs.LastState.Terminated == nil || cs.LastState.Terminated.ExitCode != 143 {
			return fmt.Errorf("status %+v", cs)
		}
		return nil
	})
}

func ptr[T any](v T) *T { return &v }

func TestReadinessGatesReady(t *testing.T) {
	h := newTestHarness(t)
	ready := false
	h.rt.setExec(func(_ runtime.ID, argv []string) ([]byte, int, error) {
		h.rt.mu.Lock()
		ok := ready
		h.rt.mu.Unlock()
		if !ok {
			return nil, 1, nil
		}
		return nil, 0, nil
	})
	p := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	p.Spec.Containers[0].ReadinessProbe = execProbe("ready", 5, 3)
	p.Spec.Containers[0].StartupProbe = execProbe("started", 1, 30)
	h.m.Sync(p)
	run0 := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	h.waitStatus("u1", "not started", func(st api.PodStatus) error {
		cs, _ := containerStatusOf(st, "app")
		if cs.State.Running == nil || cs.Started == nil || *cs.Started || cs.Ready {
			return fmt.Errorf("status %+v", cs)
		}
		return nil
	})
	// The startup probe gates readiness: no readiness probe ran yet.
	for _, e := range h.rt.execsOf(run0.ID) {
		if e.argv[0] == "ready" {
			t.Fatal("readiness probed before the startup probe succeeded")
		}
	}
	h.rt.mu.Lock()
	ready = true
	h.rt.mu.Unlock()
	h.step(time.Second)
	st := h.waitStatus("u1", "ready", func(st api.PodStatus) error {
		cs, _ := containerStatusOf(st, "app")
		if !cs.Ready || podCondition(st, api.PodReady).Status != api.ConditionTrue || podCondition(st, api.ContainersReady).Status != api.ConditionTrue {
			return fmt.Errorf("ready %v, conditions %+v", cs.Ready, st.Conditions)
		}
		return nil
	})
	readySince := podCondition(st, api.PodReady).LastTransitionTime
	h.rt.mu.Lock()
	ready = false
	h.rt.mu.Unlock()
	for range 2 {
		h.step(5 * time.Second)
	}
	h.step(0)
	if st, _ := h.rep.last("u1"); podCondition(st, api.PodReady).Status != api.ConditionTrue {
		t.Fatal("unready after 2 failures, threshold is 3")
	} else if c := podCondition(st, api.PodReady); !c.LastTransitionTime.Equal(&readySince) {
		t.Error("lastTransitionTime moved without a transition")
	}
	h.step(5 * time.Second)
	h.waitStatus("u1", "unready", func(st api.PodStatus) error {
		c := podCondition(st, api.PodReady)
		if c.Status != api.ConditionFalse || c.Reason != reasonContainersNotReady || !strings.Contains(c.Message, "[app]") {
			return fmt.Errorf("ready condition %+v", c)
		}
		if c.LastTransitionTime.Equal(&readySince) {
			return fmt.Errorf("lastTransitionTime kept across a transition")
		}
		return nil
	})
	if st, _ := h.rt.run(run0.ID); st.State != runtime.StateRunning {
		t.Error("readiness failure stopped the container")
	}
}

func TestGracefulTermination(t *testing.T) {
	h := newTestHarness(t)
	p := workerPod("u1", "web", api.RestartPolicyAlways, "app", "side")
	p.Spec.Containers[0].Lifecycle = &api.Lifecycle{PreStop: &api.LifecycleHandler{Exec: &api.ExecAction{Command: []string{"drain"}}}}
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(60))
	h.m.Sync(p)
	app := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	side := h.waitRun(rid("u1", "side", 0), runtime.StateRunning)

	del := p.DeepCopy()
	now := metav1.NewTime(h.clk.Now())
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, ptr(int64(20))
	h.m.Sync(del)
	testtool.WaitFor(t, 5*time.Second, "PodTerminated", func() error {
		if n := h.rep.terminations("u1"); n != 1 {
			return fmt.Errorf("%d terminations", n)
		}
		return nil
	})
	for _, id := range []runtime.ID{app.ID, side.ID} {
		if st, _ := h.rt.run(id); st.State != runtime.StateExited {
			t.Errorf("%s still %s", id, st.State)
		}
		if stops := h.rt.stopsOf(id); len(stops) != 1 || stops[0].grace != 20*time.Second {
			t.Errorf("%s stops %+v, want one with the deletion's 20s grace", id, stops)
		}
	}
	if execs := h.rt.execsOf(app.ID); len(execs) != 1 || execs[0].argv[0] != "drain" {
		t.Errorf("preStop execs %+v", execs)
	}
	h.step(time.Hour)
	h.step(0)
	if n := len(h.rt.startsOf("u1")); n != 2 {
		t.Errorf("%d starts: a terminating pod was restarted", n)
	}
	if n := h.rep.terminations("u1"); n != 1 {
		t.Errorf("PodTerminated called %d times", n)
	}
}

func TestStopWaitsForGraceThenKills(t *testing.T) {
	h := newTestHarness(t)
	h.rt.ignoreTerm = true
	h.m.Sync(workerPod("u1", "web", api.RestartPolicyAlways, "app"))
	app := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	del := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	now := metav1.NewTime(h.clk.Now())
	del.DeletionTimestamp = &now
	h.m.Sync(del)
	testtool.WaitFor(t, 5*time.Second, "stop called", func() error {
		if len(h.rt.stopsOf(app.ID)) == 0 || !h.clk.HasWaiters() {
			return fmt.Errorf("not stopping yet")
		}
		return nil
	})
	h.clk.Step(29 * time.Second)
	if st, _ := h.rt.run(app.ID); st.State != runtime.StateRunning {
		t.Fatal("killed before the default 30s grace")
	}
	h.clk.Step(time.Second)
	st := h.waitRun(app.ID, runtime.StateExited)
	if st.Signal != 9 {
		t.Errorf("signal %d, want 9", st.Signal)
	}
	testtool.WaitFor(t, 5*time.Second, "PodTerminated", func() error {
		if h.rep.terminations("u1") != 1 {
			return fmt.Errorf("not terminated")
		}
		return nil
	})
}

func TestEvict(t *testing.T) {
	h := newTestHarness(t)
	h.m.Sync(workerPod("u1", "web", api.RestartPolicyAlways, "app"))
	app := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.m.Evict(ctx, "u1", "The node was low on resource: memory."); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.rt.run(app.ID); st.State != runtime.StateExited {
		t.Errorf("evicted pod's container %s", st.State)
	}
	st, _ := h.rep.last("u1")
	if st.Phase != api.PodFailed || st.Reason != "Evicted" || st.Message != "The node was low on resource: memory." {
		t.Errorf("status phase %s reason %q message %q", st.Phase, st.Reason, st.Message)
	}
	h.step(time.Hour)
	h.step(0)
	if n := len(h.rt.startsOf("u1")); n != 1 {
		t.Errorf("%d starts: an evicted pod was restarted", n)
	}
	if err := h.m.Evict(ctx, "nope", "x"); err == nil {
		t.Error("evicting an unknown pod succeeded")
	}
}

func TestAdoptionAfterRestart(t *testing.T) {
	clk := testingclock.NewFakeClock(testEpoch)
	rt := newFakeRuntime(clk)
	dir := t.TempDir()
	h := newHarness(t, clk, rt, dir, &fakeRefs{})
	pod := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	h.m.Sync(pod)
	run0 := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	rt.exit(run0.ID, 1, 0)
	h.waitStatus("u1", "back-off", waitingReason(reasonCrashLoopBackOff, "back-off 10s"))
	h.step(10 * time.Second)
	run1 := h.waitRun(rid("u1", "app", 1), runtime.StateRunning)
	reported, _ := h.rep.last("u1")
	h.stop()
	if st, _ := rt.run(run1.ID); st.State != runtime.StateRunning {
		t.Fatal("stopping the manager stopped a container")
	}

	// The agent comes back: the pod arrives from the API with its status.
	h2 := newHarness(t, clk, rt, dir, &fakeRefs{})
	again := pod.DeepCopy()
	again.Status = reported
	h2.m.Sync(again)
	h2.waitStatus("u1", "adopted", func(st api.PodStatus) error {
		cs, _ := containerStatusOf(st, "app")
		if cs.State.Running == nil || cs.RestartCount != 1 || !cs.Ready {
			return fmt.Errorf("status %+v", cs)
		}
		if !st.StartTime.Equal(reported.StartTime) {
			return fmt.Errorf("startTime %v, was %v", st.StartTime, reported.StartTime)
		}
		return nil
	})
	h2.step(time.Minute)
	h2.step(0)
	if n := len(rt.startsOf("u1")); n != 2 {
		t.Errorf("%d starts: the adopted container was restarted", n)
	}
}

func TestForgetAllExceptStopsOrphans(t *testing.T) {
	h := newTestHarness(t)
	// An orphan left in the runtime by an earlier agent.
	if _, err := h.rt.Start(context.Background(), &runtime.Container{ID: rid("gone", "app", 0), Argv: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	h.m.Sync(workerPod("u1", "web", api.RestartPolicyAlways, "app"))
	h.m.Sync(workerPod("u2", "old", api.RestartPolicyAlways, "app"))
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	h.waitRun(rid("u2", "app", 0), runtime.StateRunning)
	// u1's container is kept; "gone" and u2 are the orphans: two pods.
	if adopted, orphans := h.m.ForgetAllExcept(map[types.UID]bool{"u1": true}); adopted != 1 || orphans != 2 {
		t.Errorf("ForgetAllExcept counted %d adopted, %d orphans; want 1, 2", adopted, orphans)
	}
	testtool.WaitFor(t, 5*time.Second, "orphans removed", func() error {
		for _, id := range []runtime.ID{rid("gone", "app", 0), rid("u2", "app", 0)} {
			if _, ok := h.rt.run(id); ok {
				return fmt.Errorf("%s still in the runtime", id)
			}
		}
		return nil
	})
	if st, _ := h.rt.run(rid("u1", "app", 0)); st.State != runtime.StateRunning {
		t.Errorf("kept pod's container %s", st.State)
	}
	if len(h.m.Usage(context.Background())) != 1 {
		t.Errorf("usage lists forgotten pods")
	}
}

func TestReportRetriedAfterFailure(t *testing.T) {
	h := newTestHarness(t)
	h.rep.mu.Lock()
	h.rep.failReport = 1
	h.rep.mu.Unlock()
	h.m.Sync(workerPod("u1", "web", api.RestartPolicyAlways, "app"))
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	h.step(errorBackOffInitial)
	h.waitStatus("u1", "reported after the failure", func(st api.PodStatus) error {
		if st.Phase != api.PodRunning {
			return fmt.Errorf("phase %s", st.Phase)
		}
		return nil
	})
	n := h.rep.count("u1")
	h.step(time.Minute)
	h.step(0)
	if got := h.rep.count("u1"); got != n {
		t.Errorf("%d reports without a change", got-n)
	}
}

// TestResendStatus: a status that has not changed is sent again when asked
// (its mirror pod was posted anew), once, and again after a failure.
func TestResendStatus(t *testing.T) {
	h := newTestHarness(t)
	h.m.Sync(workerPod("u1", "web", api.RestartPolicyAlways, "app"))
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	h.waitStatus("u1", "Running", func(st api.PodStatus) error {
		if st.Phase != api.PodRunning {
			return fmt.Errorf("phase %s", st.Phase)
		}
		return nil
	})
	h.settle()
	n := h.rep.count("u1")
	h.rep.mu.Lock()
	h.rep.failReport = 1
	h.rep.mu.Unlock()
	h.m.ResendStatus("u1")
	testtool.WaitFor(t, 5*time.Second, "the resend to fail", func() error {
		h.rep.mu.Lock()
		defer h.rep.mu.Unlock()
		if h.rep.failReport > 0 {
			return errors.New("not tried")
		}
		return nil
	})
	h.step(errorBackOffInitial)
	if got := h.rep.count("u1"); got != n+1 {
		t.Errorf("%d reports after a resend that failed once, want 1", got-n)
	}
	h.step(time.Minute)
	if got := h.rep.count("u1"); got != n+1 {
		t.Errorf("%d reports after the resend, want 1", got-n)
	}
}

func TestConfigErrorWaitsAndRetries(t *testing.T) {
	clk := testingclock.NewFakeClock(testEpoch)
	refs := testRefs()
	h := newHarness(t, clk, newFakeRuntime(clk), t.TempDir(), refs)
	p := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	p.Namespace = "shop"
	p.Spec.Containers[0].Env = []api.EnvVar{{Name: "TOKEN", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{
		LocalObjectReference: api.LocalObjectReference{Name: "creds"}, Key: "token"}}}}
	p.Spec.Containers[0].Args = []string{"--token=$(TOKEN)", "--cache=$(BERTH_VOLUME_CACHE)"}
	p.Spec.Volumes = []api.Volume{{Name: "cache", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}}}
	h.m.Sync(p)
	h.waitStatus("u1", "config error", waitingReason(reasonCreateContainerConfigError, "couldn't find key token in Secret shop/creds"))
	// Retried every 10 s as the kubelet retries, not on the growing
	// back-off of a crash: nothing has run.
	for range 3 {
		h.step(startRetryPeriod)
	}
	refs.mu.Lock()
	refs.secrets["shop/creds"] = &api.Secret{Data: map[string][]byte{"token": []byte("abc")}}
	refs.mu.Unlock()
	h.step(startRetryPeriod)
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	starts := h.rt.startsOf("u1")
	cache := filepath.Join(h.m.o.DataDir, "pods", "u1", "volumes", "cache")
	if got := starts[0].Argv; !slices.Equal(got, []string{"serve", "app", "--token=abc", "--cache=" + cache}) {
		t.Errorf("argv %q", got)
	}
	if !slices.Contains(starts[0].Env, "BERTH_VOLUME_CACHE="+cache) || starts[0].OOMScoreAdj != 1000 {
		t.Errorf("env %q oom %d", starts[0].Env, starts[0].OOMScoreAdj)
	}
	h.waitStatus("u1", "running", func(st api.PodStatus) error {
		if cs, _ := containerStatusOf(st, "app"); cs.State.Running == nil {
			return fmt.Errorf("state %+v", cs.State)
		}
		return nil
	})

	// Forget removes the pod's runs and files.
	h.m.Forget("u1")
	testtool.WaitFor(t, 5*time.Second, "pod forgotten", func() error {
		if _, ok := h.rt.run(rid("u1", "app", 0)); ok {
			return fmt.Errorf("run still there")
		}
		if _, err := os.Stat(cache); !os.IsNotExist(err) {
			return fmt.Errorf("files still there: %v", err)
		}
		return nil
	})
}

func TestNoCommandWaits(t *testing.T) {
	h := newTestHarness(t)
	p := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	p.Spec.Containers[0].Command = nil
	h.m.Sync(p)
	h.waitStatus("u1", "no command", waitingReason(reasonCreateContainerConfigError, "the exec runtime runs `command`"))
	if n := len(h.rt.startsOf("u1")); n != 0 {
		t.Errorf("%d starts", n)
	}
}

func TestUsageAndContainerRun(t *testing.T) {
	h := newTestHarness(t)
	static := workerPod("u1", "etcd-n1", api.RestartPolicyAlways, "etcd")
	static.Annotations = map[string]string{AnnotationConfigSource: ConfigSourceFile}
	h.m.Sync(static)
	api2 := workerPod("u2", "web", api.RestartPolicyAlways, "app", "side")
	api2.Annotations = map[string]string{AnnotationConfigSource: ConfigSourceAPI}
	h.m.Sync(api2)
	h.waitRun(rid("u1", "etcd", 0), runtime.StateRunning)
	h.waitRun(rid("u2", "app", 0), runtime.StateRunning)
	h.waitRun(rid("u2", "side", 0), runtime.StateRunning)
	h.rt.setMemory(rid("u1", "etcd", 0), 100)
	h.rt.setMemory(rid("u2", "app", 0), 30)
	h.rt.setMemory(rid("u2", "side", 0), 12)
	u := h.m.Usage(context.Background())
	if len(u) != 2 || u[0].Pod.Name != "etcd-n1" || !u[0].Static || u[0].MemoryBytes != 100 ||
		u[1].Static || u[1].MemoryBytes != 42 {
		t.Errorf("usage %+v", u)
	}
	if _, err := h.m.ContainerRun("default", "web", "", false); err == nil || !strings.Contains(err.Error(), "[app side]") {
		t.Errorf("no container named: %v", err)
	}
	if _, err := h.m.ContainerRun("default", "web", "nope", false); err == nil || !strings.Contains(err.Error(), "[app side]") {
		t.Errorf("bad container: %v", err)
	}
	if _, err := h.m.ContainerRun("default", "web", "side", true); err == nil || !strings.Contains(err.Error(), "previous terminated container") {
		t.Errorf("no previous: %v", err)
	}
	if id, err := h.m.ContainerRun("default", "web", "side", false); err != nil || id != rid("u2", "side", 0) {
		t.Errorf("side: %v %v", id, err)
	}
	if _, err := h.m.ContainerRun("default", "gone", "", false); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("unknown pod: %v, want runtime.ErrNotFound", err)
	}

	// A container that has not started: the reason it waits, in the
	// kubelet's words.
	waiting := workerPod("u3", "nocmd", api.RestartPolicyNever, "main")
	waiting.Spec.Containers[0].Command = nil
	waiting.Status.ContainerStatuses = []api.ContainerStatus{{Name: "main", State: api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: "CreateContainerConfigError"}}}}
	h.m.Sync(waiting)
	_, err := h.m.ContainerRun("default", "nocmd", "main", false)
	if want := `container "main" in pod "nocmd" is waiting to start: CreateContainerConfigError`; err == nil || err.Error() != want || errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a waiting container: %v, want %q", err, want)
	}
}

// TestInteractiveContainer: a container's stdin, stdinOnce and tty reach
// the runtime, which makes its input and terminal from them.
func TestInteractiveContainer(t *testing.T) {
	clk := testingclock.NewFakeClock(testEpoch)
	h := newHarness(t, clk, newFakeRuntime(clk), t.TempDir(), testRefs())
	p := workerPod("u1", "debug", api.RestartPolicyNever, "shell", "plain")
	p.Spec.Containers[0].Stdin, p.Spec.Containers[0].StdinOnce, p.Spec.Containers[0].TTY = true, true, true
	h.m.Sync(p)
	h.waitRun(rid("u1", "shell", 0), runtime.StateRunning)
	h.waitRun(rid("u1", "plain", 0), runtime.StateRunning)
	for _, c := range h.rt.startsOf("u1") {
		want := c.ID.Name == "shell"
		if c.Stdin != want || c.StdinOnce != want || c.TTY != want {
			t.Errorf("%s started with stdin %t, stdinOnce %t, tty %t", c.ID.Name, c.Stdin, c.StdinOnce, c.TTY)
		}
	}
}

package pods

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// fakePodEvents keeps the pod events as "Type Reason Message" lines.
type fakePodEvents struct {
	mu     sync.Mutex
	events []string
}

func (f *fakePodEvents) PodEvent(pod *api.Pod, eventType, reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pod == nil {
		// The API's recorder reads the pod's metadata.
		f.events = append(f.events, "<nil pod> "+reason)
		return
	}
	f.events = append(f.events, eventType+" "+reason+" "+message)
}

func (f *fakePodEvents) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// waitEvents waits until the events recorded are want.
func (f *fakePodEvents) waitEvents(t *testing.T, want ...string) {
	t.Helper()
	testtool.WaitFor(t, 5*time.Second, fmt.Sprintf("events %q", want), func() error {
		if got := f.all(); !slices.Equal(got, want) {
			return fmt.Errorf("events %q", got)
		}
		return nil
	})
}

// newEventHarness is newTestHarness with a Manager that records events.
func newEventHarness(t *testing.T) (*harness, *fakePodEvents) {
	t.Helper()
	clk := testingclock.NewFakeClock(testEpoch)
	rt := newFakeRuntime(clk)
	ev := &fakePodEvents{}
	h := &harness{t: t, clk: clk, rt: rt, rep: newFakeReporter()}
	m, err := New(Config{
		NodeName: "n1", NodeIP: testNodeIP, Runtime: rt, DataDir: t.TempDir(),
		MemoryCapacity: 4 << 30, Reporter: h.rep, Refs: &fakeRefs{}, Clock: clk, Events: ev,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- m.Run(ctx) }()
	t.Cleanup(h.stop)
	return h, ev
}

func TestOrphanStoppedWithoutEvents(t *testing.T) {
	h, ev := newEventHarness(t)
	// Runs an earlier agent left of a pod the API no longer has.
	if _, err := h.rt.Start(context.Background(), &runtime.Container{ID: rid("gone", "app", 0), Argv: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	h.m.ForgetAllExcept(nil)
	testtool.WaitFor(t, 5*time.Second, "orphan removed", func() error {
		if _, ok := h.rt.run(rid("gone", "app", 0)); ok {
			return fmt.Errorf("still in the runtime")
		}
		return nil
	})
	if got := ev.all(); len(got) != 0 {
		t.Errorf("events about an orphan: %q", got)
	}
}

func TestCrashLoopRecordsBackOff(t *testing.T) {
	h, ev := newEventHarness(t)
	h.m.Sync(workerPod("u1", "web", api.RestartPolicyAlways, "app"))
	run0 := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	const (
		started = "Normal Started Started container app"
		backOff = "Warning BackOff Back-off restarting failed container app"
	)
	ev.waitEvents(t, started)

	if err := h.rt.exit(run0.ID, 1, 0); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("u1", "back-off 10s", waitingReason(reasonCrashLoopBackOff, "back-off 10s"))
	ev.waitEvents(t, started, backOff)
	// Syncs during the back-off record nothing more.
	h.step(5 * time.Second)
	h.settle()
	if got := ev.all(); len(got) != 2 {
		t.Fatalf("events during the back-off: %q", got)
	}

	h.step(5 * time.Second)
	run1 := h.waitRun(rid("u1", "app", 1), runtime.StateRunning)
	ev.waitEvents(t, started, backOff, started)
	if err := h.rt.exit(run1.ID, 1, 0); err != nil {
		t.Fatal(err)
	}
	ev.waitEvents(t, started, backOff, started, backOff)
}

func TestLivenessFailureRecordsUnhealthyAndKilling(t *testing.T) {
	h, ev := newEventHarness(t)
	healthy := true
	h.rt.setExec(func(_ runtime.ID, argv []string) ([]byte, int, error) {
		h.rt.mu.Lock()
		defer h.rt.mu.Unlock()
		if healthy {
			return nil, 0, nil
		}
		return []byte("dead"), 1, nil
	})
	p := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	p.Spec.Containers[0].LivenessProbe = execProbe("alive", 10, 1)
	h.m.Sync(p)
	run0 := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	testtool.WaitFor(t, 5*time.Second, "a liveness probe", func() error {
		if n := len(h.rt.execsOf(run0.ID)); n < 1 {
			return fmt.Errorf("%d probes", n)
		}
		return nil
	})
	h.rt.mu.Lock()
	healthy = false
	h.rt.mu.Unlock()
	h.step(10 * time.Second)
	h.waitRun(run0.ID, runtime.StateExited)
	testtool.WaitFor(t, 5*time.Second, "Unhealthy and Killing", func() error {
		got := ev.all()
		if len(got) < 3 || got[0] != "Normal Started Started container app" ||
			!strings.HasPrefix(got[1], "Warning Unhealthy Liveness probe failed: ") ||
			got[2] != "Normal Killing Container app failed liveness probe, will be restarted" {
			return fmt.Errorf("events %q", got)
		}
		return nil
	})
}

func TestDeletionRecordsKilling(t *testing.T) {
	h, ev := newEventHarness(t)
	p := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	h.m.Sync(p)
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	deleting := p.DeepCopy()
	now := metav1.NewTime(h.clk.Now())
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &now, ptr(int64(0))
	h.m.Sync(deleting)
	ev.waitEvents(t, "Normal Started Started container app", "Normal Killing Stopping container app")
}

// A pod that runs past its activeDeadlineSeconds, counted from the start
// the agent reported, is stopped with its own grace and marked Failed
// with reason DeadlineExceeded, a Warning event saying so, and is not
// started again.
func TestActiveDeadlineSeconds(t *testing.T) {
	h, ev := newEventHarness(t)
	pod := workerPod("u1", "job", api.RestartPolicyAlways, "app")
	deadline := int64(60)
	pod.Spec.ActiveDeadlineSeconds = &deadline
	h.m.Sync(pod)
	app := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	h.waitStatus("u1", "Running", func(st api.PodStatus) error {
		if st.Phase != api.PodRunning || st.StartTime == nil {
			return fmt.Errorf("phase %s, startTime %v", st.Phase, st.StartTime)
		}
		return nil
	})
	h.step(59 * time.Second)
	h.settle()
	if st, _ := h.rt.run(app.ID); st.State != runtime.StateRunning {
		t.Fatalf("stopped %s before its deadline", st.State)
	}
	h.step(time.Second)
	h.waitStatus("u1", "Failed, DeadlineExceeded", func(st api.PodStatus) error {
		if st.Phase != api.PodFailed || st.Reason != "DeadlineExceeded" || st.Message != "Pod was active on the node longer than the specified deadline" {
			return fmt.Errorf("phase %s, reason %q, message %q", st.Phase, st.Reason, st.Message)
		}
		return nil
	})
	if st, _ := h.rt.run(app.ID); st.State != runtime.StateExited || st.Signal == 9 {
		t.Errorf("the container: %s, signal %d; want it stopped by SIGTERM within its grace", st.State, st.Signal)
	}
	if !slices.Contains(ev.all(), "Warning DeadlineExceeded Pod was active on the node longer than the specified deadline") {
		t.Errorf("events %q", ev.all())
	}
	h.step(time.Hour)
	h.step(0)
	if n := len(h.rt.startsOf("u1")); n != 1 {
		t.Errorf("%d starts: a pod past its deadline was started again", n)
	}
}

package pods

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

const testNodeIP = "10.0.0.7"

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeReporter records what a Manager reports.
type fakeReporter struct {
	mu         sync.Mutex
	statuses   map[types.UID][]api.PodStatus
	terminated map[types.UID]int
	failReport int // fail this many reports first
}

func newFakeReporter() *fakeReporter {
	return &fakeReporter{statuses: map[types.UID][]api.PodStatus{}, terminated: map[types.UID]int{}}
}

func (r *fakeReporter) ReportStatus(_ context.Context, pod *api.Pod, st api.PodStatus) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failReport > 0 {
		r.failReport--
		return errors.New("api unreachable")
	}
	r.statuses[pod.UID] = append(r.statuses[pod.UID], *st.DeepCopy())
	return nil
}

func (r *fakeReporter) PodTerminated(_ context.Context, pod *api.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terminated[pod.UID]++
	return nil
}

func (r *fakeReporter) last(uid types.UID) (api.PodStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.statuses[uid]
	if len(s) == 0 {
		return api.PodStatus{}, false
	}
	return s[len(s)-1], true
}

func (r *fakeReporter) count(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.statuses[uid])
}

func (r *fakeReporter) terminations(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.terminated[uid]
}

// fakeRefs serves ConfigMaps, Secrets and claims from maps.
type fakeRefs struct {
	mu         sync.Mutex
	configMaps map[string]*api.ConfigMap
	secrets    map[string]*api.Secret
	claims     map[string]string
}

func (f *fakeRefs) ConfigMap(_ context.Context, ns, name string) (*api.ConfigMap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, fmt.Errorf("configmaps %q not found", name)
}

func (f *fakeRefs) Secret(_ context.Context, ns, name string) (*api.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("secrets %q not found", name)
}

func (f *fakeRefs) ClaimPath(_ context.Context, ns, claim string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.claims[ns+"/"+claim]; ok {
		return p, nil
	}
	return "", fmt.Errorf("claim %s/%s is not bound", ns, claim)
}

// harness runs a Manager over a fake runtime on a fake clock.
type harness struct {
	t      *testing.T
	clk    *testingclock.FakeClock
	rt     *fakeRuntime
	rep    *fakeReporter
	m      *Manager
	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, clk *testingclock.FakeClock, rt *fakeRuntime, dataDir string, refs RefResolver) *harness {
	t.Helper()
	h := &harness{t: t, clk: clk, rt: rt, rep: newFakeReporter()}
	m, err := New(Config{
		NodeName: "n1", NodeIP: testNodeIP, Runtime: rt, DataDir: dataDir,
		MemoryCapacity: 4 << 30, Reporter: h.rep, Refs: refs, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- m.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

// newTestHarness is a harness over a fresh runtime and clock.
func newTestHarness(t *testing.T) *harness {
	clk := testingclock.NewFakeClock(testEpoch)
	return newHarness(t, clk, newFakeRuntime(clk), t.TempDir(), &fakeRefs{})
}

// stop ends the manager and waits for Run and its workers.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
}

// step advances the fake clock once every worker waits, so the timers it
// set fire.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.settle()
	h.clk.Step(d)
	h.settle()
}

// settle waits until every worker waits for a wake or a timer that has
// not fired yet.
func (h *harness) settle() {
	h.t.Helper()
	testtool.WaitFor(h.t, 5*time.Second, "workers idle", func() error {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		now := h.clk.Now().UnixNano()
		for uid, w := range h.m.workers {
			if !w.idle.Load() || len(w.wake) > 0 {
				return fmt.Errorf("worker %s busy", uid)
			}
			if until := w.idleUntil.Load(); until != 0 && until <= now {
				return fmt.Errorf("worker %s has a timer to handle", uid)
			}
		}
		return nil
	})
}

// waitRun waits for a run to be in state.
func (h *harness) waitRun(id runtime.ID, state runtime.State) runtime.Status {
	h.t.Helper()
	var st runtime.Status
	testtool.WaitFor(h.t, 5*time.Second, fmt.Sprintf("%s %s", id, state), func() error {
		s, ok := h.rt.run(id)
		if !ok {
			return errors.New("no such run")
		}
		if s.State != state {
			return fmt.Errorf("state %s", s.State)
		}
		st = s
		return nil
	})
	return st
}

// waitStatus waits for a reported status that cond accepts.
func (h *harness) waitStatus(uid types.UID, what string, cond func(api.PodStatus) error) api.PodStatus {
	h.t.Helper()
	var got api.PodStatus
	testtool.WaitFor(h.t, 5*time.Second, what, func() error {
		st, ok := h.rep.last(uid)
		if !ok {
			return errors.New("no status reported")
		}
		got = st
		return cond(st)
	})
	return got
}

func containerStatusOf(st api.PodStatus, name string) (api.ContainerStatus, error) {
	for _, cs := range append(append([]api.ContainerStatus(nil), st.InitContainerStatuses...), st.ContainerStatuses...) {
		if cs.Name == name {
			return cs, nil
		}
	}
	return api.ContainerStatus{}, fmt.Errorf("no status for container %s", name)
}

func podCondition(st api.PodStatus, t api.PodConditionType) api.PodCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return api.PodCondition{}
}

// workerPod is a pod with one container per name, each running "serve".
func workerPod(uid, name string, policy api.RestartPolicy, containers ...string) *api.Pod {
	p := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid)},
		Spec:       api.PodSpec{RestartPolicy: policy, NodeName: "n1"},
		Status:     api.PodStatus{Phase: api.PodPending},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: c, Image: "busybox", Command: []string{"serve", c}})
	}
	return p
}

func rid(uid, name string, attempt int) runtime.ID {
	return runtime.ID{PodUID: uid, Name: name, Attempt: attempt}
}

package pods

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

func TestPodStatus(t *testing.T) {
	t0 := testEpoch
	running := func(name string, attempt int) runtime.Status {
		return runtime.Status{ID: rid("u", name, attempt), State: runtime.StateRunning, StartedAt: t0}
	}
	exitedRun := func(name string, attempt, code int) runtime.Status {
		reason := "Error"
		if code == 0 {
			reason = "Completed"
		}
		return runtime.Status{ID: rid("u", name, attempt), State: runtime.StateExited, StartedAt: t0, FinishedAt: t0.Add(time.Minute), ExitCode: code, Reason: reason}
	}
	spec := func(name string) *api.Container { return &api.Container{Name: name, Image: "img"} }
	view := func(name string, ready bool, runs ...runtime.Status) containerView {
		return containerView{spec: spec(name), runs: runs, ready: ready, started: ready}
	}
	type want struct {
		phase        api.PodPhase
		initialized  api.ConditionStatus
		ready        api.ConditionStatus
		state        string // of the first container: waiting reason, "running" or "terminated"
		restartCount int32
		lastExit     int32 // -1: no last state
	}
	tests := []struct {
		name       string
		policy     api.RestartPolicy
		init       []containerView
		main       []containerView
		evicted    string
		terminated bool
		want       want
	}{
		{"not started", api.RestartPolicyAlways, nil, []containerView{view("a", false)},
			"", false, want{api.PodPending, "True", "False", reasonContainerCreating, 0, -1}},
		{"running ready", api.RestartPolicyAlways, nil, []containerView{view("a", true, running("a", 0))},
			"", false, want{api.PodRunning, "True", "True", "running", 0, -1}},
		{"running not ready", api.RestartPolicyAlways, nil, []containerView{view("a", false, running("a", 0))},
			"", false, want{api.PodRunning, "True", "False", "running", 0, -1}},
		{"restarted shows last state", api.RestartPolicyAlways, nil, []containerView{view("a", true, exitedRun("a", 1, 2), running("a", 2))},
			"", false, want{api.PodRunning, "True", "True", "running", 2, 2}},
		{"back-off waiting", api.RestartPolicyAlways, nil, []containerView{{spec: spec("a"), runs: []runtime.Status{exitedRun("a", 0, 1)},
			waiting: &api.ContainerStateWaiting{Reason: reasonCrashLoopBackOff}}},
			"", false, want{api.PodRunning, "True", "False", reasonCrashLoopBackOff, 0, 1}},
		{"one of two started", api.RestartPolicyAlways, nil, []containerView{view("a", true, running("a", 0)), view("b", false)},
			"", false, want{api.PodRunning, "True", "False", "running", 0, -1}},
		{"all succeeded under OnFailure", api.RestartPolicyOnFailure, nil, []containerView{view("a", false, exitedRun("a", 0, 0)), view("b", false, exitedRun("b", 0, 0))},
			"", false, want{api.PodSucceeded, "True", "False", "terminated", 0, -1}},
		{"one failed under Never", api.RestartPolicyNever, nil, []containerView{view("a", false, exitedRun("a", 0, 1)), view("b", false, exitedRun("b", 0, 0))},
			"", false, want{api.PodFailed, "True", "False", "terminated", 0, -1}},
		{"one failed one running under Never", api.RestartPolicyNever, nil, []containerView{view("a", false, exitedRun("a", 0, 1)), view("b", true, running("b", 0))},
			"", false, want{api.PodRunning, "True", "False", "terminated", 0, -1}},
		{"exited under Always still running", api.RestartPolicyAlways, nil, []containerView{view("a", false, exitedRun("a", 0, 0))},
			"", false, want{api.PodRunning, "True", "False", "terminated", 0, -1}},
		{"deleted and stopped", api.RestartPolicyAlways, nil, []containerView{view("a", false, exitedRun("a", 0, 143))},
			"", true, want{api.PodFailed, "True", "False", "terminated", 0, -1}},
		{"init running", api.RestartPolicyAlways, []containerView{view("i", false, running("i", 0))}, []containerView{view("a", false)},
			"", false, want{api.PodPending, "False", "False", reasonPodInitializing, 0, -1}},
		{"init failed under Never", api.RestartPolicyNever, []containerView{view("i", false, exitedRun("i", 0, 1))}, []containerView{view("a", false)},
			"", false, want{api.PodFailed, "False", "False", reasonPodInitializing, 0, -1}},
		{"init done", api.RestartPolicyAlways, []containerView{view("i", false, exitedRun("i", 0, 0))}, []containerView{view("a", true, running("a", 0))},
			"", false, want{api.PodRunning, "True", "True", "running", 0, -1}},
		{"evicted", api.RestartPolicyAlways, nil, []containerView{view("a", false, exitedRun("a", 0, 137))},
			"low on memory", true, want{api.PodFailed, "True", "False", "terminated", 0, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: api.PodSpec{RestartPolicy: tt.policy}}
			in := statusInput{pod: pod, nodeIP: "10.1.1.1", now: t0.Add(time.Hour), init: tt.init, main: tt.main, terminated: tt.terminated}
			if tt.evicted != "" {
				in.endReason, in.endMessage = eviction.ReasonEvicted, tt.evicted
			}
			st := podStatus(in)
			if st.Phase != tt.want.phase {
				t.Errorf("phase %s, want %s", st.Phase, tt.want.phase)
			}
			if c := podCondition(st, api.PodInitialized); c.Status != tt.want.initialized {
				t.Errorf("Initialized %s, want %s", c.Status, tt.want.initialized)
			}
			if c := podCondition(st, api.PodReady); c.Status != tt.want.ready {
				t.Errorf("Ready %s, want %s", c.Status, tt.want.ready)
			}
			if c := podCondition(st, api.ContainersReady); c.Status != tt.want.ready {
				t.Errorf("ContainersReady %s, want %s", c.Status, tt.want.ready)
			}
			if c := podCondition(st, api.PodScheduled); c.Status != api.ConditionTrue {
				t.Errorf("PodScheduled %s", c.Status)
			}
			cs := st.ContainerStatuses[0]
			var state string
			switch {
			case cs.State.Waiting != nil:
				state = cs.State.Waiting.Reason
			case cs.State.Running != nil:
				state = "running"
			case cs.State.Terminated != nil:
				state = "terminated"
			}
			if state != tt.want.state {
				t.Errorf("state %s, want %s", state, tt.want.state)
			}
			if cs.RestartCount != tt.want.restartCount {
				t.Errorf("restartCount %d, want %d", cs.RestartCount, tt.want.restartCount)
			}
			lastExit := int32(-1)
			if cs.LastState.Terminated != nil {
				lastExit = cs.LastState.Terminated.ExitCode
			}
			if lastExit != tt.want.lastExit {
				t.Errorf("last exit %d, want %d", lastExit, tt.want.lastExit)
			}
			if st.PodIP != "10.1.1.1" || st.HostIP != "10.1.1.1" || len(st.PodIPs) != 1 || st.QOSClass != api.QOSBestEffort {
				t.Errorf("ips %s %s %v qos %s", st.PodIP, st.HostIP, st.PodIPs, st.QOSClass)
			}
			if tt.evicted != "" && (st.Reason != "Evicted" || st.Message != tt.evicted) {
				t.Errorf("reason %q message %q", st.Reason, st.Message)
			}
		})
	}
}

func TestPodStatusKeepsTimes(t *testing.T) {
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	main := []containerView{{spec: &api.Container{Name: "a"}, runs: []runtime.Status{{ID: rid("u", "a", 0), State: runtime.StateRunning, StartedAt: testEpoch}}, ready: true, started: true}}
	first := podStatus(statusInput{pod: pod, now: testEpoch, main: main})
	later := podStatus(statusInput{pod: pod, prev: first, now: testEpoch.Add(time.Hour), main: main})
	if !later.StartTime.Equal(first.StartTime) {
		t.Errorf("startTime moved: %v → %v", first.StartTime, later.StartTime)
	}
	for i := range later.Conditions {
		if !later.Conditions[i].LastTransitionTime.Equal(&first.Conditions[i].LastTransitionTime) {
			t.Errorf("%s lastTransitionTime moved without a change", later.Conditions[i].Type)
		}
	}
	main[0].ready = false
	unready := podStatus(statusInput{pod: pod, prev: later, now: testEpoch.Add(2 * time.Hour), main: main})
	c := podCondition(unready, api.PodReady)
	if want := metav1.NewTime(testEpoch.Add(2 * time.Hour)); !c.LastTransitionTime.Equal(&want) {
		t.Errorf("Ready went False at %v, want %v", c.LastTransitionTime, want)
	}
	if cs := unready.ContainerStatuses[0]; cs.ContainerID != "berth-exec://u/a/0" || cs.Started == nil || !*cs.Started {
		t.Errorf("container status %+v", cs)
	}
}

// A pod with readiness gates is Ready only once each gate's condition,
// which another party writes, is True; until then Ready says which gate
// holds it, in the kubelet's words. The conditions others own are kept
// as the API has them; those the agent owns are its own.
func TestPodStatusReadinessGates(t *testing.T) {
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	main := []containerView{{spec: &api.Container{Name: "a"}, runs: []runtime.Status{{ID: rid("u", "a", 0), State: runtime.StateRunning, StartedAt: testEpoch}}, ready: true, started: true}}
	status := func() api.PodStatus { return podStatus(statusInput{pod: pod, now: testEpoch, main: main}) }

	st := status()
	ready, containers := podCondition(st, api.PodReady), podCondition(st, api.ContainersReady)
	if containers.Status != api.ConditionTrue || ready.Status != api.ConditionFalse || ready.Reason != "ReadinessGatesNotReady" ||
		ready.Message != `corresponding condition of pod readiness gate "example.com/lb" does not exist., corresponding condition of pod readiness gate "example.com/dns" does not exist.` {
		t.Fatalf("no gate's condition: ContainersReady %+v, Ready %+v", containers, ready)
	}

	pod.Status.Conditions = []api.PodCondition{
		{Type: api.PodReady, Status: api.ConditionTrue}, // the agent's own: not kept
		{Type: "example.com/lb", Status: api.ConditionTrue, Reason: "Registered"},
		{Type: "example.com/dns", Status: api.ConditionFalse},
		{Type: api.PodDisruptionTarget, Status: api.ConditionTrue, Reason: "EvictionByEvictionAPI"},
	}
	st = status()
	if ready := podCondition(st, api.PodReady); ready.Status != api.ConditionFalse || ready.Message != `the status of pod readiness gate "example.com/dns" is not "True", but False` {
		t.Fatalf("one gate False: Ready %+v", ready)
	}
	var types []string
	for _, c := range st.Conditions {
		types = append(types, string(c.Type))
	}
	if want := []string{"PodScheduled", "Initialized", "ContainersReady", "Ready", "example.com/lb", "example.com/dns", "DisruptionTarget"}; !slices.Equal(types, want) {
		t.Fatalf("conditions %q, want %q", types, want)
	}
	if lb := podCondition(st, "example.com/lb"); lb.Reason != "Registered" {
		t.Errorf("the gate's condition was not kept as written: %+v", lb)
	}

	pod.Status.Conditions[2].Status = api.ConditionTrue
	if ready := podCondition(status(), api.PodReady); ready.Status != api.ConditionTrue || ready.Reason != "" {
		t.Errorf("every gate True: Ready %+v", ready)
	}
	main[0].ready = false
	if ready := podCondition(status(), api.PodReady); ready.Status != api.ConditionFalse || ready.Reason != "ContainersNotReady" {
		t.Errorf("gates True, a container unready: Ready %+v", ready)
	}
}

package table

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

var podNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(podNow.Add(-d)) }

func running(ready bool, restarts int32) api.ContainerStatus {
	return api.ContainerStatus{Name: "c", Ready: ready, RestartCount: restarts,
		State: api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: ago(time.Hour)}}}
}

func waiting(reason string, restarts int32, lastFinished time.Duration) api.ContainerStatus {
	s := api.ContainerStatus{Name: "c", RestartCount: restarts,
		State: api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: reason}}}
	if lastFinished > 0 {
		s.LastState.Terminated = &api.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: ago(lastFinished)}
	}
	return s
}

func terminated(reason string, code, signal int32) api.ContainerStatus {
	return api.ContainerStatus{Name: "c",
		State: api.ContainerState{Terminated: &api.ContainerStateTerminated{Reason: reason, ExitCode: code, Signal: signal}}}
}

func TestSummarizePod(t *testing.T) {
	deleted := metav1.NewTime(podNow)
	readyCond := []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}
	tests := []struct {
		name         string
		containers   int
		inits        int
		phase        api.PodPhase
		reason       string
		conds        []api.PodCondition
		initStatuses []api.ContainerStatus
		statuses     []api.ContainerStatus
		deleting     bool
		ready        string
		status       string
		restarts     string
	}{
		{name: "pending, nothing reported", containers: 1, phase: api.PodPending,
			ready: "0/1", status: "Pending", restarts: "0"},
		{name: "running and ready", containers: 2, phase: api.PodRunning,
			statuses: []api.ContainerStatus{running(true, 0), running(true, 0)},
			ready:    "2/2", status: "Running", restarts: "0"},
		{name: "running, one not ready", containers: 2, phase: api.PodRunning,
			statuses: []api.ContainerStatus{running(true, 0), running(false, 0)},
			ready:    "1/2", status: "Running", restarts: "0"},
		{name: "crash loop shows when it last restarted", containers: 1, phase: api.PodRunning,
			statuses: []api.ContainerStatus{waiting("CrashLoopBackOff", 5, 5*time.Minute)},
			ready:    "0/1", status: "CrashLoopBackOff", restarts: "5 (5m ago)"},
		{name: "restarts without a last state", containers: 1, phase: api.PodRunning,
			statuses: []api.ContainerStatus{running(true, 2)},
			ready:    "1/1", status: "Running", restarts: "2"},
		{name: "restarts summed over containers, latest termination wins", containers: 2, phase: api.PodRunning,
			statuses: []api.ContainerStatus{waiting("CrashLoopBackOff", 3, 2*time.Hour), waiting("CrashLoopBackOff", 1, 150*time.Second)},
			ready:    "0/2", status: "CrashLoopBackOff", restarts: "4 (2m30s ago)"},
		{name: "completed", containers: 1, phase: api.PodSucceeded,
			statuses: []api.ContainerStatus{terminated("Completed", 0, 0)},
			ready:    "0/1", status: "Completed", restarts: "0"},
		{name: "error", containers: 1, phase: api.PodFailed,
			statuses: []api.ContainerStatus{terminated("Error", 1, 0)},
			ready:    "0/1", status: "Error", restarts: "0"},
		{name: "exit code without reason", containers: 1, phase: api.PodFailed,
			statuses: []api.ContainerStatus{terminated("", 3, 0)},
			ready:    "0/1", status: "ExitCode:3", restarts: "0"},
		{name: "signal without reason", containers: 1, phase: api.PodFailed,
			statuses: []api.ContainerStatus{terminated("", 137, 9)},
			ready:    "0/1", status: "Signal:9", restarts: "0"},
		{name: "one completed while another runs ready", containers: 2, phase: api.PodRunning, conds: readyCond,
			statuses: []api.ContainerStatus{running(true, 0), terminated("Completed", 0, 0)},
			ready:    "1/2", status: "Running", restarts: "0"},
		{name: "one completed while another runs, pod not ready", containers: 2, phase: api.PodRunning,
			statuses: []api.ContainerStatus{running(true, 0), terminated("Completed", 0, 0)},
			ready:    "1/2", status: "NotReady", restarts: "0"},
		{name: "init container running", containers: 1, inits: 2, phase: api.PodPending,
			initStatuses: []api.ContainerStatus{terminated("Completed", 0, 0), running(false, 0)},
			statuses:     []api.ContainerStatus{waiting("PodInitializing", 0, 0)},
			ready:        "0/1", status: "Init:1/2", restarts: "0"},
		{name: "init container crash loop counts its restarts", containers: 1, inits: 1, phase: api.PodPending,
			initStatuses: []api.ContainerStatus{waiting("CrashLoopBackOff", 4, 30*time.Second)},
			ready:        "0/1", status: "Init:CrashLoopBackOff", restarts: "4 (30s ago)"},
		{name: "init container failed", containers: 1, inits: 1, phase: api.PodFailed,
			initStatuses: []api.ContainerStatus{terminated("Error", 1, 0)},
			ready:        "0/1", status: "Init:Error", restarts: "0"},
		{name: "init container failed without reason", containers: 1, inits: 1, phase: api.PodFailed,
			initStatuses: []api.ContainerStatus{terminated("", 2, 0)},
			ready:        "0/1", status: "Init:ExitCode:2", restarts: "0"},
		{name: "held by scheduling gates", containers: 1, phase: api.PodPending,
			conds: []api.PodCondition{{Type: api.PodScheduled, Status: api.ConditionFalse, Reason: api.PodReasonSchedulingGated}},
			ready: "0/1", status: "SchedulingGated", restarts: "0"},
		{name: "pod reason replaces phase", containers: 1, phase: api.PodFailed, reason: "Evicted",
			ready: "0/1", status: "Evicted", restarts: "0"},
		{name: "terminating", containers: 1, phase: api.PodRunning, deleting: true,
			statuses: []api.ContainerStatus{running(true, 0)},
			ready:    "1/1", status: "Terminating", restarts: "0"},
		{name: "finished pods being deleted keep their status", containers: 1, phase: api.PodSucceeded, deleting: true,
			statuses: []api.ContainerStatus{terminated("Completed", 0, 0)},
			ready:    "0/1", status: "Completed", restarts: "0"},
		{name: "deleted on a lost node", containers: 1, phase: api.PodRunning, reason: NodeUnreachablePodReason, deleting: true,
			statuses: []api.ContainerStatus{running(true, 0)},
			ready:    "1/1", status: "Unknown", restarts: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &api.Pod{}
			p.Spec.Containers = make([]api.Container, tt.containers)
			p.Spec.InitContainers = make([]api.Container, tt.inits)
			p.Status.Phase = tt.phase
			p.Status.Reason = tt.reason
			p.Status.Conditions = tt.conds
			p.Status.InitContainerStatuses = tt.initStatuses
			p.Status.ContainerStatuses = tt.statuses
			if tt.deleting {
				p.DeletionTimestamp = &deleted
			}
			k, _ := api.KindNamed("Pod")
			row := Row(k, p, false, podNow)
			if got := row[1]; got != tt.ready {
				t.Errorf("READY = %q, want %q", got, tt.ready)
			}
			if got := row[2]; got != tt.status {
				t.Errorf("STATUS = %q, want %q", got, tt.status)
			}
			if got := row[3]; got != tt.restarts {
				t.Errorf("RESTARTS = %q, want %q", got, tt.restarts)
			}
		})
	}
}

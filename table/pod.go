package table

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// NodeUnreachablePodReason is the pod status reason the node controller
// sets when it deletes the pods of a node that stopped answering; kubectl
// then shows such a pod as Unknown, not Terminating.
const NodeUnreachablePodReason = "NodeLost"

// podRow is what the READY, STATUS and RESTARTS columns of a pod show.
type podRow struct {
	ready    int
	total    int
	status   string
	restarts int
	// lastRestart is when a container last terminated before its
	// current run; zero when none has.
	lastRestart metav1.Time
}

// summarizePod computes a pod's READY, STATUS and RESTARTS the way kubectl
// does (printPod in kubernetes/pkg/printers/internalversion), so that a
// user reads the same word in `berth get` and `kubectl get`: the phase,
// replaced by the pod's reason (SchedulingGated while the scheduler
// waits for its gates), by the first failing or waiting init
// container (`Init:1/2`, `Init:CrashLoopBackOff`), by the last container
// with a waiting or terminated reason (`CrashLoopBackOff`, `Completed`,
// `Error`, `ExitCode:3`), and finally by Terminating once the pod is being
// deleted.
func summarizePod(p *api.Pod) podRow {
	r := podRow{total: len(p.Spec.Containers)}
	status := string(p.Status.Phase)
	if p.Status.Reason != "" {
		status = p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == api.PodScheduled && c.Reason == api.PodReasonSchedulingGated {
			status = api.PodReasonSchedulingGated
		}
	}

	initializing := false
	for i, c := range p.Status.InitContainerStatuses {
		r.restarts += int(c.RestartCount)
		r.noteTermination(c.LastState)
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case c.State.Terminated != nil:
			t := c.State.Terminated
			switch {
			case t.Reason != "":
				status = "Init:" + t.Reason
			case t.Signal != 0:
				status = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				status = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			status = "Init:" + c.State.Waiting.Reason
		default:
			status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || podConditionTrue(p, api.PodInitialized) {
		// Restarts of init containers no longer matter once they are done.
		r.restarts = 0
		r.lastRestart = metav1.Time{}
		hasRunning := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := p.Status.ContainerStatuses[i]
			r.restarts += int(c.RestartCount)
			r.noteTermination(c.LastState)
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				status = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				status = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				status = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				status = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				r.ready++
			}
		}
		// A container that completed while another still runs does not
		// make the pod Completed.
		if status == "Completed" && hasRunning {
			if podConditionTrue(p, api.PodReady) {
				status = string(api.PodRunning)
			} else {
				status = "NotReady"
			}
		}
	}

	switch {
	case p.DeletionTimestamp != nil && p.Status.Reason == NodeUnreachablePodReason:
		status = "Unknown"
	case p.DeletionTimestamp != nil && p.Status.Phase != api.PodSucceeded && p.Status.Phase != api.PodFailed:
		status = "Terminating"
	}
	r.status = status
	return r
}

// noteTermination keeps the latest time a container finished before it
// was restarted.
func (r *podRow) noteTermination(last api.ContainerState) {
	if t := last.Terminated; t != nil && r.lastRestart.Before(&t.FinishedAt) {
		r.lastRestart = t.FinishedAt
	}
}

// restartsCell renders RESTARTS as kubectl does: the count, and when a
// container has restarted, how long ago it last did (`5 (3m ago)`).
func (r podRow) restartsCell(now time.Time) string {
	s := strconv.Itoa(r.restarts)
	if r.restarts != 0 && !r.lastRestart.IsZero() {
		s = fmt.Sprintf("%d (%s ago)", r.restarts, Age(r.lastRestart, now))
	}
	return s
}

func podConditionTrue(p *api.Pod, t api.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == api.ConditionTrue
		}
	}
	return false
}

// podIP is the pod's first IP.
func podIP(p *api.Pod) string {
	if len(p.Status.PodIPs) > 0 && p.Status.PodIPs[0].IP != "" {
		return p.Status.PodIPs[0].IP
	}
	return p.Status.PodIP
}

package pods

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// containerIDPrefix marks container IDs of the exec runtime, as
// "containerd://" marks containerd's in Kubernetes.
const containerIDPrefix = "berth-exec://"

// containerID is a run's containerID in the pod's status: the runtime's
// own name of it (containerd://ID) under a PodRuntime, else the exec
// runtime's.
func containerID(s *runtime.Status) string {
	if s.RuntimeID != "" {
		return s.RuntimeID
	}
	return containerIDPrefix + s.ID.String()
}

// Reasons and messages of pod status.
const (
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonContainersNotReady       = "ContainersNotReady"
	reasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
	reasonPodCompleted             = "PodCompleted"
	reasonCompleted                = "Completed"
	reasonError                    = "Error"
)

// containerView is what a worker knows of one container: its runs from the
// runtime and what only the worker knows (why it waits, its probes).
type containerView struct {
	spec *api.Container
	// runs are the runtime's runs of the container, oldest attempt first.
	runs []runtime.Status
	// waiting, when set, is why the container is not running now (a
	// back-off, a config error); it wins over the last run's end.
	waiting *api.ContainerStateWaiting
	ready   bool
	started bool
}

// current is the latest run, nil before the first start.
func (v containerView) current() *runtime.Status {
	if len(v.runs) == 0 {
		return nil
	}
	return &v.runs[len(v.runs)-1]
}

// previousRun is the run before the latest, nil if none.
func (v containerView) previousRun() *runtime.Status {
	if len(v.runs) < 2 {
		return nil
	}
	return &v.runs[len(v.runs)-2]
}

// statusInput is everything a pod's status is made from.
type statusInput struct {
	pod *api.Pod
	// prev is the status reported last (or the pod's own), for the times
	// that must not move: startTime and conditions' lastTransitionTime.
	prev   api.PodStatus
	nodeIP string
	// ownNetwork: the pod has a network of its own, whose addresses are
	// podIPs (none yet before its sandbox runs); else it has the node's.
	ownNetwork bool
	podIPs     []string
	now        time.Time
	init       []containerView
	main       []containerView
	// endReason and endMessage say why the pod was stopped for good, once
	// it was evicted or ran past its activeDeadlineSeconds.
	endReason, endMessage string
	// terminated: the pod is being deleted (or evicted) and every
	// container has stopped; it will not run again.
	terminated bool
}

// exited says whether a run has ended (or was lost).
func exited(s *runtime.Status) bool {
	return s != nil && s.State != runtime.StateRunning
}

// willRestart says whether a container whose run ended with exitCode is
// started again under policy.
func willRestart(policy api.RestartPolicy, exitCode int) bool {
	switch policy {
	case api.RestartPolicyNever:
		return false
	case api.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// initRestartPolicy is how init containers restart: on failure, unless the
// pod never restarts.
func initRestartPolicy(p api.RestartPolicy) api.RestartPolicy {
	if p == api.RestartPolicyNever {
		return p
	}
	return api.RestartPolicyOnFailure
}

// initState says how far a pod's init containers are: all done, one failed
// for good, or still going.
func initState(policy api.RestartPolicy, init, main []containerView) (done, failed bool) {
	for _, v := range main {
		if len(v.runs) > 0 {
			return true, false // containers started: init is behind us
		}
	}
	for _, v := range init {
		cur := v.current()
		if !exited(cur) {
			return false, false
		}
		if cur.ExitCode != 0 {
			return false, !willRestart(initRestartPolicy(policy), cur.ExitCode)
		}
	}
	return true, false
}

// podPhase is the pod's phase from its containers, as the kubelet reckons it.
func podPhase(in statusInput) api.PodPhase {
	if in.endReason != "" {
		return api.PodFailed
	}
	policy := in.pod.Spec.RestartPolicy
	done, failed := initState(policy, in.init, in.main)
	if failed {
		return api.PodFailed
	}
	if !done {
		return api.PodPending
	}
	var running, waiting, succeeded, failedN, restarting int
	for _, v := range in.main {
		cur := v.current()
		switch {
		case cur == nil:
			waiting++
		case cur.State == runtime.StateRunning:
			running++
		case in.terminated || !willRestart(policy, cur.ExitCode):
			if cur.ExitCode == 0 {
				succeeded++
			} else {
				failedN++
			}
		default:
			restarting++
		}
	}
	switch {
	case waiting > 0 && running == 0 && succeeded+failedN+restarting == 0:
		return api.PodPending
	case running > 0 || restarting > 0 || waiting > 0:
		return api.PodRunning
	case failedN > 0:
		return api.PodFailed
	}
	return api.PodSucceeded
}

// podStatus is a pod's status: a pure function of the pod, its runs and
// what its worker knows, so it can be compared and reported only on change.
func podStatus(in statusInput) api.PodStatus {
	p := in.pod
	phase := podPhase(in)
	st := api.PodStatus{
		Phase:    phase,
		HostIP:   in.nodeIP,
		PodIP:    in.nodeIP,
		QOSClass: api.PodQOSClass(p),
	}
	if in.nodeIP != "" {
		st.PodIPs = []api.PodIP{{IP: in.nodeIP}}
	}
	if in.ownNetwork {
		// A pod of its own network (a PodRuntime's sandbox): no address
		// until its sandbox has one.
		st.PodIP, st.PodIPs = "", nil
		for _, ip := range in.podIPs {
			st.PodIPs = append(st.PodIPs, api.PodIP{IP: ip})
		}
		if len(in.podIPs) > 0 {
			st.PodIP = in.podIPs[0]
		}
	}
	if in.endReason != "" {
		st.Reason, st.Message = in.endReason, in.endMessage
	}
	if in.prev.StartTime != nil {
		st.StartTime = in.prev.StartTime.DeepCopy()
	} else {
		t := metaTime(in.now)
		st.StartTime = &t
	}
	initDone, _ := initState(p.Spec.RestartPolicy, in.init, in.main)
	for _, v := range in.init {
		st.InitContainerStatuses = append(st.InitContainerStatuses, containerStatus(v, false))
	}
	var unready []string
	for _, v := range in.main {
		cs := containerStatus(v, !initDone)
		if !cs.Ready {
			unready = append(unready, v.spec.Name)
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}

	scheduled := api.PodCondition{Type: api.PodScheduled, Status: api.ConditionTrue}
	initialized := api.PodCondition{Type: api.PodInitialized, Status: api.ConditionTrue}
	if !initDone {
		var pending []string
		for _, v := range in.init {
			if cur := v.current(); !exited(cur) || cur.ExitCode != 0 {
				pending = append(pending, v.spec.Name)
			}
		}
		initialized.Status = api.ConditionFalse
		initialized.Reason = reasonContainersNotInitialized
		initialized.Message = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pending, " "))
	}
	ready := api.PodCondition{Type: api.ContainersReady, Status: api.ConditionTrue}
	switch {
	case phase == api.PodSucceeded:
		ready.Status, ready.Reason = api.ConditionFalse, reasonPodCompleted
	case len(unready) > 0:
		ready.Status, ready.Reason = api.ConditionFalse, reasonContainersNotReady
		ready.Message = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	podReady := ready
	podReady.Type = api.PodReady
	if podReady.Status == api.ConditionTrue {
		if msg := unreadyGates(p); msg != "" {
			podReady.Status, podReady.Reason, podReady.Message = api.ConditionFalse, reasonReadinessGatesNotReady, msg
		}
	}
	for _, c := range []api.PodCondition{scheduled, initialized, ready, podReady} {
		c.LastTransitionTime = metaTime(in.now)
		for _, old := range in.prev.Conditions {
			if old.Type == c.Type && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, c)
	}
	// The conditions others own (a readiness gate's, DisruptionTarget)
	// are kept as the API has them, as the kubelet keeps them.
	st.Conditions = WithOthersConditions(st.Conditions, p.Status.Conditions)
	return st
}

// WithOthersConditions is own, the conditions the agent owns, followed by
// those of from that others own.
func WithOthersConditions(own, from []api.PodCondition) []api.PodCondition {
	out := make([]api.PodCondition, 0, len(own)+len(from))
	for _, c := range own {
		if nodeCondition(c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range from {
		if !nodeCondition(c.Type) {
			out = append(out, *c.DeepCopy())
		}
	}
	return out
}

// nodeCondition says whether the node's agent owns a pod condition of
// type t, as the kubelet owns them (PodConditionByKubelet).
func nodeCondition(t api.PodConditionType) bool {
	switch t {
	case api.PodScheduled, api.PodInitialized, api.ContainersReady, api.PodReady:
		return true
	}
	return false
}

// unreadyGates says why the readiness gates of p keep it unready, in the
// kubelet's words, or "" when each gate's condition is True.
func unreadyGates(p *api.Pod) string {
	var msgs []string
	for _, g := range p.Spec.ReadinessGates {
		t := api.PodConditionType(g.ConditionType)
		i := slices.IndexFunc(p.Status.Conditions, func(c api.PodCondition) bool { return c.Type == t })
		switch {
		case i < 0:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case p.Status.Conditions[i].Status != api.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, p.Status.Conditions[i].Status))
		}
	}
	return strings.Join(msgs, ", ")
}

// containerStatus is one container's status. initPending marks a regular
// container that waits for init containers.
func containerStatus(v containerView, initPending bool) api.ContainerStatus {
	cs := api.ContainerStatus{Name: v.spec.Name, Image: v.spec.Image, ImageID: ""}
	started := false
	cur := v.current()
	switch {
	case cur == nil:
		w := v.waiting
		if w == nil {
			w = &api.ContainerStateWaiting{Reason: reasonContainerCreating}
			if initPending {
				w.Reason = reasonPodInitializing
			}
		}
		cs.State.Waiting = w.DeepCopy()
		if prev := v.previousRun(); prev != nil {
			cs.LastState.Terminated = terminatedState(prev)
		}
	case cur.State == runtime.StateRunning:
		cs.ContainerID = containerID(cur)
		cs.RestartCount = int32(cur.ID.Attempt)
		cs.State.Running = &api.ContainerStateRunning{StartedAt: metaTime(cur.StartedAt)}
		if prev := v.previousRun(); prev != nil {
			cs.LastState.Terminated = terminatedState(prev)
		}
		cs.Ready = v.ready
		started = v.started
	default:
		cs.ContainerID = containerID(cur)
		cs.RestartCount = int32(cur.ID.Attempt)
		if v.waiting != nil {
			cs.State.Waiting = v.waiting.DeepCopy()
			cs.LastState.Terminated = terminatedState(cur)
		} else {
			cs.State.Terminated = terminatedState(cur)
			if prev := v.previousRun(); prev != nil {
				cs.LastState.Terminated = terminatedState(prev)
			}
		}
	}
	cs.Started = &started
	return cs
}

func terminatedState(s *runtime.Status) *api.ContainerStateTerminated {
	reason := s.Reason
	if reason == "" {
		reason = reasonError
		if s.ExitCode == 0 {
			reason = reasonCompleted
		}
	}
	return &api.ContainerStateTerminated{
		ExitCode:    int32(s.ExitCode),
		Signal:      int32(s.Signal),
		Reason:      reason,
		Message:     s.Message,
		StartedAt:   metaTime(s.StartedAt),
		FinishedAt:  metaTime(s.FinishedAt),
		ContainerID: containerID(s),
	}
}

// metaTime is t as the API keeps it (whole seconds), so a status read back
// from the API compares equal to the one computed here.
func metaTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t.Truncate(time.Second))
}

// groupRuns sorts a pod's runs by container and attempt.
func groupRuns(runs []runtime.Status) map[string][]runtime.Status {
	out := map[string][]runtime.Status{}
	for _, r := range runs {
		out[r.ID.Name] = append(out[r.ID.Name], r)
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ID.Attempt < rs[j].ID.Attempt })
	}
	return out
}

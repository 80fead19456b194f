package pods

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/agent/probe"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// Timing of a worker.
const (
	// defaultGrace is a pod's termination grace when it sets none.
	defaultGrace = 30 * time.Second
	// volumeRefresh is how often ConfigMap and Secret volumes are
	// rewritten from their objects.
	volumeRefresh = time.Minute
)

// podWorker converges one pod. Sync, Forget, Evict and the runtime's exits
// only wake it; each sync reads the runtime's runs and the latest pod and
// acts from there (level-triggered), in the phase that what it was told
// has led it to (workerTransitions).
type podWorker struct {
	m    *Manager
	uid  types.UID
	wake chan struct{}
	// idle is set while the worker waits for a wake or a timer, and
	// idleUntil (Unix nanoseconds, 0 for none) says when that timer fires:
	// tests step a fake clock only once every worker waits for the future.
	idle      atomic.Bool
	idleUntil atomic.Int64
	// resend asks for the status to be sent though it has not changed.
	resend atomic.Bool

	// Guarded by m.mu.
	running bool

	// What the worker was told, guarded by mu: the latest pod, that it
	// is forgotten, that it is evicted or ran past its
	// activeDeadlineSeconds (with evictReason and evictMsg; the worker
	// closes evictDone once the pod is stopped and reported).
	mu          sync.Mutex
	pod         *api.Pod
	ips         []string
	forget      bool
	evictReason string
	evictMsg    string
	evictDone   chan struct{}

	// Owned by the worker goroutine.
	phase workerPhase
	// retry is the back-off after a sync that failed; failed says the
	// current sync did.
	retry         errorBackOff
	failed        bool
	containers    map[string]*containerRuntimeState
	last          *api.PodStatus // the status reported last
	refused       string         // why the pod was refused at admission
	refusedReason string         // the reason of that refusal
	dnsWarned     bool           // MissingClusterDNS was said of the pod
	volumes       map[string]string
	volumesAt     time.Time
	volumesErr    error
	volumeBackOff time.Duration
	volumesRetry  time.Time
	// terminatedSent: the pod's deletion is done (PodTerminated was
	// reported), so its deletion timestamp leads nowhere any more.
	terminatedSent bool
}

// containerRuntimeState is what a worker remembers of a container between
// syncs: what the runtime cannot tell it.
type containerRuntimeState struct {
	// backOff is the wait before the next restart; seenExit the attempt
	// whose exit set it, so each exit counts once.
	backOff   time.Duration
	seenExit  int
	restartAt time.Time

	// waitReason/waitMessage say why the container could not be started;
	// it is retried at retryAt.
	waitReason  string
	waitMessage string
	retryAt     time.Time

	// The image pull's back-off, under a PodRuntime: the next try at
	// pullRetryAt; pullErr says why the last failed; pullSeen, that the
	// image was found once.
	pullBackOff time.Duration
	pullRetryAt time.Time
	pullErr     string
	pullSeen    bool

	// Probe state of run (reset when a new run starts).
	run       runtime.ID
	hasRun    bool
	started   bool
	ready     bool
	startup   *probeState
	liveness  *probeState
	readiness *probeState
}

type probeState struct {
	spec    *api.Probe
	timing  probe.Timing
	tracker *probe.Tracker
	next    time.Time
	// output says why the last probe failed, for the Unhealthy event;
	// failed: the last probe failed; reported: that event was recorded
	// for the current failures.
	output           string
	failed, reported bool
}

func newPodWorker(m *Manager, uid types.UID) *podWorker {
	return &podWorker{m: m, uid: uid, wake: make(chan struct{}, 1), containers: map[string]*containerRuntimeState{}, retry: newErrorBackOff(m.o.Clock)}
}

func (w *podWorker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *podWorker) setPod(p *api.Pod) {
	w.mu.Lock()
	w.pod = p
	w.mu.Unlock()
	w.poke()
}

func (w *podWorker) setForget() {
	w.mu.Lock()
	w.forget = true
	w.mu.Unlock()
	w.poke()
}

// setEvict has the worker stop its pod for good and mark it Failed with
// reason and msg (eviction.ReasonEvicted, or ReasonDeadlineExceeded):
// once, with the first reason. For the first, it calls announce with the
// pod before the worker can see it, so that what announce records comes
// before the worker's own events of it (Killing).
func (w *podWorker) setEvict(reason, msg string, announce func(*api.Pod)) (done <-chan struct{}) {
	w.mu.Lock()
	if w.evictDone == nil {
		announce(w.pod)
		w.evictReason, w.evictMsg = reason, msg
		w.evictDone = make(chan struct{})
	}
	done = w.evictDone
	w.mu.Unlock()
	w.poke()
	return done
}

func (w *podWorker) hasPod() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod != nil && !w.forget
}

// activePod is the pod while it runs on: nil once it is forgotten,
// evicted, being deleted or finished.
func (w *podWorker) activePod() *api.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.forget || w.evictDone != nil || w.pod == nil || w.pod.DeletionTimestamp != nil || w.pod.Finished() {
		return nil
	}
	return w.pod
}

func (w *podWorker) currentPod() *api.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.forget {
		return nil
	}
	return w.pod
}

func (w *podWorker) run(ctx context.Context) {
	clk := w.m.o.Clock
	for {
		w.failed = false
		next, done := w.sync(ctx)
		if done || ctx.Err() != nil {
			return
		}
		if !w.failed {
			w.retry.reset()
		}
		var timerC <-chan time.Time
		if !next.IsZero() {
			d := next.Sub(clk.Now())
			if d <= 0 {
				continue
			}
			t := clk.NewTimer(d)
			timerC = t.C()
			w.idleUntil.Store(next.UnixNano())
			w.idle.Store(true)
			select {
			case <-ctx.Done():
			case <-w.wake:
			case <-timerC:
			}
			w.idle.Store(false)
			t.Stop()
			continue
		}
		w.idleUntil.Store(0)
		w.idle.Store(true)
		select {
		case <-ctx.Done():
		case <-w.wake:
		}
		w.idle.Store(false)
	}
}

// wakeAt keeps the earliest non-zero time.
func wakeAt(cur, t time.Time) time.Time {
	if t.IsZero() || (!cur.IsZero() && cur.Before(t)) {
		return cur
	}
	return t
}

func (w *podWorker) log(pod *api.Pod) *slogger {
	return &slogger{w: w, pod: pod}
}

// backOff marks the sync as failed and says when to try again.
func (w *podWorker) backOff() time.Time {
	w.failed = true
	return w.retry.next()
}

// advance moves the worker through the events of what it was told, in
// order: a forgotten pod is cleaned up whatever else holds; an eviction
// that waits, then a deletion not yet done, stop the pod; a pod runs.
func (w *podWorker) advance(pod *api.Pod, forget bool, evictDone chan struct{}) {
	if forget {
		w.fire(eventForget)
	}
	if evictDone != nil && !isClosed(evictDone) {
		w.fire(eventEvict)
	}
	if pod != nil && pod.DeletionTimestamp != nil && !w.terminatedSent {
		w.fire(eventDelete)
	}
	if pod != nil {
		w.fire(eventPod)
	}
}

// fire moves the worker on by e, if e leads anywhere from its phase.
func (w *podWorker) fire(e workerEvent) {
	if next, ok := transition(w.phase, e); ok {
		w.phase = next
	}
}

// isClosed says whether ch, which only the worker closes, is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// sync converges the pod once and says when to look again (zero: only
// when woken) and whether the worker is done for good.
func (w *podWorker) sync(ctx context.Context) (time.Time, bool) {
	w.mu.Lock()
	pod, forget, evictReason, evictMsg, evictDone := w.pod, w.forget, w.evictReason, w.evictMsg, w.evictDone
	w.mu.Unlock()
	clk := w.m.o.Clock
	rt := w.m.o.Runtime

	w.advance(pod, forget, evictDone)
	if w.phase == phaseWaiting {
		return time.Time{}, false // Forget or Sync will tell
	}

	all, err := rt.List(ctx)
	if err != nil {
		w.log(pod).err("list runtime", err)
		return w.backOff(), false
	}
	var mine []runtime.Status
	for _, r := range all {
		if r.ID.PodUID == string(w.uid) {
			mine = append(mine, r)
		}
	}
	runs := groupRuns(mine)

	switch w.phase {
	case phaseCleaning:
		if err := w.stopAll(ctx, pod, runs, podGrace(pod)); err != nil {
			w.log(pod).err("stop forgotten pod", err)
			return w.backOff(), false
		}
		var errs []error
		for _, rs := range runs {
			for _, r := range rs {
				if err := rt.Remove(ctx, r.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
					errs = append(errs, fmt.Errorf("remove %s: %w", r.ID, err))
				}
			}
		}
		if pr := w.m.podRuntime(); pr != nil {
			if err := pr.RemovePod(ctx, string(w.uid)); err != nil {
				errs = append(errs, err)
			}
		}
		errs = append(errs, w.m.removePodFiles(w.uid))
		if err := errors.Join(errs...); err != nil {
			w.log(pod).err("clean up forgotten pod", err)
			return w.backOff(), false
		}
		w.fire(eventCleaned)
		return time.Time{}, true
	case phaseTerminating:
		next, stopped := w.terminate(ctx, pod, runs, evictReason, evictMsg, evictDone)
		if stopped {
			w.fire(eventStopped)
		}
		return next, false
	case phaseTerminated:
		// Stopped and reported: only a resend is left to do.
		if w.resend.Load() && w.last != nil && !w.report(ctx, pod, *w.last) {
			return w.backOff(), false
		}
		return time.Time{}, false
	}

	if w.phase == phaseRunning && !pod.Finished() && len(runs) == 0 {
		if fields := unsupported(pod, w.m.features()); len(fields) > 0 {
			w.refused, w.refusedReason = refusal(w.m.o.NodeName, w.m.runtimeName(), fields), ReasonUnsupported
			w.podEvent(pod, api.EventTypeWarning, ReasonUnsupported, w.refused)
			w.fire(eventRefuse)
		} else if msg := w.m.sysctls.forbidden(pod); msg != "" {
			// The kubelet's rejection: the event says why, the status
			// that the pod was rejected for it.
			w.refused, w.refusedReason = "Pod was rejected: "+msg, ReasonSysctlForbidden
			w.podEvent(pod, api.EventTypeWarning, ReasonSysctlForbidden, msg)
			w.fire(eventRefuse)
		}
	}
	if w.phase == phaseRefused {
		st := api.PodStatus{Phase: api.PodFailed, Reason: w.refusedReason, Message: w.refused, QOSClass: pod.Status.QOSClass}
		if !w.report(ctx, pod, st) {
			return w.backOff(), false
		}
		return time.Time{}, false
	}

	var next time.Time
	terminal := pod.Finished()
	if !terminal {
		if deadline, ok := w.activeDeadline(pod); ok {
			if !clk.Now().Before(deadline) {
				w.setEvict(ReasonDeadlineExceeded, messageDeadlineExceeded, func(pod *api.Pod) {
					w.podEvent(pod, api.EventTypeWarning, ReasonDeadlineExceeded, messageDeadlineExceeded)
				})
				return time.Time{}, false // woken: it stops the pod
			}
			next = deadline
		}
	}
	init, main := w.views(pod, runs)
	initDone, initFailed := initState(pod.Spec.RestartPolicy, init, main)
	if !terminal && !initFailed && w.podFinished(pod, main) {
		terminal = true
	}
	if !terminal && !initFailed {
		next = wakeAt(next, w.ensureVolumes(ctx, pod))
		if w.volumes != nil {
			if !initDone {
				next = wakeAt(next, w.syncInit(ctx, pod, runs))
			} else {
				for i := range pod.Spec.Containers {
					next = wakeAt(next, w.syncContainer(ctx, pod, &pod.Spec.Containers[i], runs[pod.Spec.Containers[i].Name], pod.Spec.RestartPolicy))
				}
			}
		}
	}
	w.collectGarbage(ctx, pod, runs)

	// Read the runs again: this sync may have started or stopped some.
	if all, err = rt.List(ctx); err == nil {
		mine = mine[:0]
		for _, r := range all {
			if r.ID.PodUID == string(w.uid) {
				mine = append(mine, r)
			}
		}
		runs = groupRuns(mine)
	}
	init, main = w.views(pod, runs)
	st := podStatus(statusInput{pod: pod, prev: w.prevStatus(pod), nodeIP: w.m.o.NodeIP, ownNetwork: w.m.podRuntime() != nil && !pod.Spec.HostNetwork, podIPs: w.podIPs(), now: clk.Now(), init: init, main: main})
	if !w.report(ctx, pod, st) {
		next = wakeAt(next, w.backOff())
	}
	return next, false
}

// Why a pod that ran past its spec.activeDeadlineSeconds ended, as the
// kubelet says it.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// activeDeadline is when the pod must have ended, its
// activeDeadlineSeconds after the start the agent reported for it, as the
// kubelet's activeDeadlineHandler counts it.
func (w *podWorker) activeDeadline(pod *api.Pod) (time.Time, bool) {
	secs := pod.Spec.ActiveDeadlineSeconds
	if secs == nil {
		return time.Time{}, false
	}
	start := w.prevStatus(pod).StartTime
	if start == nil {
		return time.Time{}, false // not started: the first status starts the count
	}
	return start.Add(time.Duration(*secs) * time.Second), true
}

// podFinished says whether every container has ended for good, so nothing
// is to be started again.
func (w *podWorker) podFinished(pod *api.Pod, main []containerView) bool {
	for _, v := range main {
		cur := v.current()
		if !exited(cur) || willRestart(pod.Spec.RestartPolicy, cur.ExitCode) {
			return false
		}
	}
	return len(main) > 0
}

func (w *podWorker) prevStatus(pod *api.Pod) api.PodStatus {
	if w.last != nil {
		return *w.last
	}
	return pod.Status
}

// report sends st if it differs from what was sent last, or a resend was
// asked for; false if the reporter failed (the next sync tries again).
func (w *podWorker) report(ctx context.Context, pod *api.Pod, st api.PodStatus) bool {
	resend := w.resend.Swap(false)
	if !resend && w.last != nil && reflect.DeepEqual(*w.last, st) {
		return true
	}
	if err := w.m.o.Reporter.ReportStatus(ctx, pod, st); err != nil {
		if !errors.Is(err, ErrNotConnected) {
			w.log(pod).err("report status", err)
		}
		if resend {
			w.resend.Store(true)
		}
		return false
	}
	w.last = &st
	return true
}

// views joins the spec's containers with their runs and the worker's
// knowledge, in spec order.
func (w *podWorker) views(pod *api.Pod, runs map[string][]runtime.Status) (init, main []containerView) {
	now := w.m.o.Clock.Now()
	view := func(c *api.Container, policy api.RestartPolicy) containerView {
		v := containerView{spec: c, runs: runs[c.Name]}
		cs := w.containers[c.Name]
		if cs == nil {
			return v
		}
		cur := v.current()
		switch {
		case cs.waitReason != "" && (cur == nil || exited(cur)):
			v.waiting = &api.ContainerStateWaiting{Reason: cs.waitReason, Message: cs.waitMessage}
		case exited(cur) && willRestart(policy, cur.ExitCode) && cs.seenExit == cur.ID.Attempt && now.Before(cs.restartAt):
			v.waiting = &api.ContainerStateWaiting{
				Reason:  reasonCrashLoopBackOff,
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", cs.backOff, c.Name, podRef(pod)),
			}
		}
		if cur != nil && cur.State == runtime.StateRunning && cs.hasRun && cs.run == cur.ID {
			v.ready, v.started = cs.ready, cs.started
		}
		return v
	}
	for i := range pod.Spec.InitContainers {
		init = append(init, view(&pod.Spec.InitContainers[i], initRestartPolicy(pod.Spec.RestartPolicy)))
	}
	for i := range pod.Spec.Containers {
		main = append(main, view(&pod.Spec.Containers[i], pod.Spec.RestartPolicy))
	}
	return init, main
}

func (w *podWorker) state(name string) *containerRuntimeState {
	cs := w.containers[name]
	if cs == nil {
		cs = &containerRuntimeState{seenExit: -1}
		w.containers[name] = cs
	}
	return cs
}

// ensureVolumes sets the pod's volumes up the first time and refreshes
// them now and then; it returns when to try again after a failure.
func (w *podWorker) ensureVolumes(ctx context.Context, pod *api.Pod) time.Time {
	now := w.m.o.Clock.Now()
	if w.volumes != nil && now.Sub(w.volumesAt) < volumeRefresh {
		return w.volumesAt.Add(volumeRefresh)
	}
	if w.volumes == nil && now.Before(w.volumesRetry) {
		return w.volumesRetry
	}
	paths, err := setUpVolumes(ctx, volumeEnv{dataDir: w.m.o.DataDir, refs: w.m.o.Refs, allocatable: w.m.o.Allocatable, now: now}, pod)
	if err == nil {
		err = setUpServiceAccountToken(ctx, w.m.o.DataDir, w.m.o.Refs, w.m.o.CAData, pod, now)
	}
	if err != nil {
		if w.volumes != nil {
			// Keep running on what was set up; say so and retry later.
			w.log(pod).err("refresh volumes", err)
			w.volumesAt = now
			return now.Add(volumeRefresh)
		}
		w.volumeBackOff = nextVolumeBackOff(w.volumeBackOff)
		w.volumesRetry = now.Add(w.volumeBackOff)
		reason := reasonContainerCreating
		var ce *configError
		if errors.As(err, &ce) {
			reason = reasonCreateContainerConfigError
		}
		for _, c := range append(append([]api.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
			cs := w.state(c.Name)
			cs.waitReason, cs.waitMessage = reason, err.Error()
		}
		w.volumesErr = err
		return w.volumesRetry
	}
	if w.volumes == nil && w.volumesErr != nil {
		for _, cs := range w.containers {
			cs.waitReason, cs.waitMessage = "", ""
		}
	}
	w.volumes, w.volumesAt, w.volumesErr, w.volumeBackOff = paths, now, nil, 0
	return now.Add(volumeRefresh)
}

// syncInit runs the init containers one by one to a clean exit.
func (w *podWorker) syncInit(ctx context.Context, pod *api.Pod, runs map[string][]runtime.Status) time.Time {
	policy := initRestartPolicy(pod.Spec.RestartPolicy)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		rs := runs[c.Name]
		if len(rs) > 0 {
			cur := rs[len(rs)-1]
			if exited(&cur) && cur.ExitCode == 0 {
				continue
			}
		}
		return w.syncContainer(ctx, pod, c, rs, policy)
	}
	return time.Time{}
}

// syncContainer converges one container: start it, restart it after its
// back-off, or probe it while it runs. It returns when to look again.
func (w *podWorker) syncContainer(ctx context.Context, pod *api.Pod, c *api.Container, rs []runtime.Status, policy api.RestartPolicy) time.Time {
	now := w.m.o.Clock.Now()
	cs := w.state(c.Name)
	if len(rs) == 0 {
		return w.start(ctx, pod, c, cs, 0)
	}
	cur := rs[len(rs)-1]
	if cur.State == runtime.StateRunning {
		return w.probe(ctx, pod, c, cs, cur)
	}
	if !willRestart(policy, cur.ExitCode) {
		return time.Time{}
	}
	if cs.seenExit != cur.ID.Attempt {
		ranFor := time.Duration(0)
		if !cur.StartedAt.IsZero() && !cur.FinishedAt.IsZero() {
			ranFor = cur.FinishedAt.Sub(cur.StartedAt)
		}
		finished := cur.FinishedAt
		if finished.IsZero() {
			finished = now
		}
		cs.backOff = nextBackOff(cs.backOff, ranFor)
		cs.seenExit = cur.ID.Attempt
		cs.restartAt = finished.Add(cs.backOff)
		w.podEvent(pod, api.EventTypeWarning, ReasonBackOff, "Back-off restarting failed container "+c.Name)
	}
	if now.Before(cs.restartAt) {
		return cs.restartAt
	}
	return w.start(ctx, pod, c, cs, cur.ID.Attempt+1)
}

// start starts attempt of c, or records why it cannot and when to retry.
func (w *podWorker) start(ctx context.Context, pod *api.Pod, c *api.Container, cs *containerRuntimeState, attempt int) time.Time {
	now := w.m.o.Clock.Now()
	if !cs.retryAt.IsZero() && now.Before(cs.retryAt) {
		return cs.retryAt
	}
	rc, err := w.resolve(ctx, pod, c, attempt)
	if err == nil && rc.Image != nil {
		if next, ok := w.pullImage(ctx, pod, c, cs, rc); !ok {
			return next
		}
	}
	if err == nil {
		var st runtime.Status
		st, err = w.m.o.Runtime.Start(ctx, rc)
		if err != nil && st.State == runtime.StateExited {
			// A run that ended before it began (StartError): an exit
			// like any other, which the restart policy answers, as the
			// kubelet answers a container that failed to start.
			cs.waitReason, cs.waitMessage, cs.retryAt = "", "", time.Time{}
			w.podEvent(pod, api.EventTypeWarning, ReasonFailed, "Error: "+err.Error())
			return now
		}
	}
	if err != nil {
		cs.waitReason = reasonCreateContainerError
		var ce *configError
		var rce *runtime.ConfigError
		if errors.As(err, &ce) || errors.As(err, &rce) {
			cs.waitReason = reasonCreateContainerConfigError
		}
		cs.waitMessage = err.Error()
		cs.retryAt = now.Add(startRetryPeriod)
		w.podEvent(pod, api.EventTypeWarning, ReasonFailed, "Error: "+err.Error())
		return cs.retryAt
	}
	cs.waitReason, cs.waitMessage, cs.retryAt = "", "", time.Time{}
	w.podEvent(pod, api.EventTypeNormal, ReasonStarted, "Started container "+c.Name)
	w.postStart(ctx, pod, c, rc.ID)
	// Look again at once: the new run's probes start from its start.
	return now
}

// resolve turns c into what the runtime starts.
func (w *podWorker) resolve(ctx context.Context, pod *api.Pod, c *api.Container, attempt int) (*runtime.Container, error) {
	src := envSource{pod: pod, nodeIP: w.m.o.NodeIP, refs: w.m.o.Refs, volumes: w.volumes, tokenFile: serviceAccountTokenFile(w.m.o.DataDir, pod), path: w.m.path, apiServer: w.m.apiServer, allocatable: w.m.o.Allocatable}
	pr := w.m.podRuntime()
	if pr != nil {
		// The image has its own PATH, and the volumes and token are
		// mounted where the pod says, not found by host paths.
		src.images = true
		if ips := w.podIPs(); len(ips) > 0 {
			src.podIP = ips[0]
		}
	}
	env, vars, err := containerEnv(ctx, src, c)
	if err != nil {
		return nil, err
	}
	var argv []string
	if pr == nil {
		if argv, err = commandLine(c, vars); err != nil {
			return nil, err
		}
	}
	rc := &runtime.Container{
		ID:           runtime.ID{PodUID: string(pod.UID), Name: c.Name, Attempt: attempt},
		PodNamespace: pod.Namespace,
		PodName:      pod.Name,
		Argv:         argv,
		Env:          env,
		WorkingDir:   c.WorkingDir,
		Limits:       containerLimits(c),
		OOMScoreAdj:  oomScoreAdj(api.PodQOSClass(pod), containerMemoryRequest(c), w.m.o.MemoryCapacity),
		Stdin:        c.Stdin,
		StdinOnce:    c.StdinOnce,
		TTY:          c.TTY,
	}
	rc.RunAsUser, rc.RunAsGroup = runAsUser(pod, c), runAsGroup(pod, c)
	if pr != nil {
		if err := w.imageContainer(pod, c, vars, rc); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

// collectGarbage removes exited runs older than the last two of each
// container: the current run and the one before it stay for
// `logs --previous`.
func (w *podWorker) collectGarbage(ctx context.Context, pod *api.Pod, runs map[string][]runtime.Status) {
	for _, rs := range runs {
		for i := 0; i < len(rs)-2; i++ {
			if !exited(&rs[i]) {
				continue
			}
			if err := w.m.o.Runtime.Remove(ctx, rs[i].ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				w.log(pod).err("remove old run", err)
			}
		}
	}
}

// slogger logs a worker's errors with the pod's name: errors are logged at
// the top of the worker's loop, where they stop being returned.
type slogger struct {
	w   *podWorker
	pod *api.Pod
}

func (l *slogger) err(msg string, err error) {
	args := []any{"uid", string(l.w.uid), "err", err}
	if l.pod != nil {
		args = append(args, "pod", l.pod.Namespace+"/"+l.pod.Name)
	}
	l.w.m.o.Logger.Error(msg, args...)
}

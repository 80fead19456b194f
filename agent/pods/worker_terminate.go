package pods

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// podGrace is the pod's termination grace: the deletion's, else the
// spec's, else 30s.
func podGrace(pod *api.Pod) time.Duration {
	switch {
	case pod == nil:
		return defaultGrace
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultGrace
}

// EvictionGrace is all the grace an evicted pod's containers get, preStop
// hooks included: the kubelet's for its hard and local-storage evictions
// (immediateEvictionGracePeriodSeconds), since the node or the pod's
// limit cannot wait for the pod's own.
const EvictionGrace = time.Second

// terminate stops a pod being deleted or evicted and reports its end:
// stopped says that all of it is done, else it says when to try again.
func (w *podWorker) terminate(ctx context.Context, pod *api.Pod, runs map[string][]runtime.Status, evictReason, evictMsg string, evictDone chan struct{}) (next time.Time, stopped bool) {
	clk := w.m.o.Clock
	grace := podGrace(pod)
	if evictReason == eviction.ReasonEvicted {
		grace = min(grace, EvictionGrace)
	}
	if err := w.stopAll(ctx, pod, runs, grace); err != nil {
		w.log(pod).err("stop pod", err)
		return w.backOff(), false
	}
	all, err := w.m.o.Runtime.List(ctx)
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
	runs = groupRuns(mine)
	for _, cs := range w.containers {
		cs.waitReason, cs.restartAt = "", time.Time{}
	}
	init, main := w.views(pod, runs)
	for i := range main {
		main[i].waiting = nil
	}
	if pr := w.m.podRuntime(); pr != nil {
		// The containers are stopped: the sandbox goes too, and its
		// address with it, as the kubelet's KillPod does.
		w.podIPs()
		if err := pr.StopPod(ctx, string(w.uid)); err != nil {
			w.log(pod).err("stop pod sandbox", err)
			return w.backOff(), false
		}
	}
	st := podStatus(statusInput{pod: pod, prev: w.prevStatus(pod), nodeIP: w.m.o.NodeIP, ownNetwork: w.m.podRuntime() != nil && !pod.Spec.HostNetwork, podIPs: w.knownIPs(), now: clk.Now(),
		init: init, main: main, endReason: evictReason, endMessage: evictMsg, terminated: true})
	if !w.report(ctx, pod, st) {
		return w.backOff(), false
	}
	// An evicted pod's volumes that cannot be removed yet are tried
	// again later: the eviction is done (stopped and reported), and the
	// eviction manager that waits for it must go on.
	stopped = true
	if evictMsg != "" {
		if err := w.m.removePodVolumes(w.uid); err != nil {
			w.log(pod).err("remove the evicted pod's volumes", err)
			next, stopped = w.backOff(), false
		}
	}
	if evictDone != nil && !isClosed(evictDone) {
		close(evictDone)
	}
	if pod.DeletionTimestamp != nil && !w.terminatedSent {
		if err := w.m.o.Reporter.PodTerminated(ctx, pod); err != nil {
			w.log(pod).err("report pod terminated", err)
			return w.backOff(), false
		}
		w.terminatedSent = true
	}
	return next, stopped
}

// stopAll stops every running container of the pod in parallel, each
// after its preStop hook, all within grace.
func (w *podWorker) stopAll(ctx context.Context, pod *api.Pod, runs map[string][]runtime.Status, grace time.Duration) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for name, rs := range runs {
		for _, r := range rs {
			if r.State != runtime.StateRunning {
				continue
			}
			w.podEvent(pod, api.EventTypeNormal, ReasonKilling, "Stopping container "+name)
			wg.Add(1)
			go func(id runtime.ID) {
				defer wg.Done()
				if err := w.stopRun(ctx, pod, id, grace); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}(r.ID)
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopRun runs the container's preStop hook (bounded by grace), then
// stops the run with what is left of grace. A hook that fails is a
// Warning event, and the run is stopped all the same.
func (w *podWorker) stopRun(ctx context.Context, pod *api.Pod, id runtime.ID, grace time.Duration) error {
	clk := w.m.o.Clock
	start := clk.Now()
	if c := findContainer(pod, id.Name); c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		hctx, cancel := clockTimeout(ctx, clk, grace)
		msg, err := w.runHook(hctx, pod, c, id, c.Lifecycle.PreStop)
		cancel()
		if err != nil && !errors.Is(err, runtime.ErrNotFound) {
			w.m.o.Logger.Warn("preStop hook failed", "container", id.String(), "err", err)
			w.podEvent(pod, api.EventTypeWarning, ReasonFailedPreStopHook, msg)
		}
	}
	left := grace - clk.Since(start)
	if left < 0 {
		left = 0
	}
	if err := w.m.o.Runtime.Stop(ctx, id, left); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	return nil
}

func findContainer(pod *api.Pod, name string) *api.Container {
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

package pods

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/probe"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// newProbeState prepares a probe of a run that started at start; initial is
// the verdict before the first result.
func newProbeState(p *api.Probe, start time.Time, initial probe.Result) *probeState {
	if p == nil {
		return nil
	}
	t := probe.TimingOf(p)
	return &probeState{spec: p, timing: t, tracker: probe.NewTracker(initial), next: start.Add(t.InitialDelay)}
}

// probe runs the running container's due probes: the startup probe until it
// succeeds, then liveness (a failure kills the run, to be restarted per
// policy) and readiness. It returns when the next probe is due.
func (w *podWorker) probe(ctx context.Context, pod *api.Pod, c *api.Container, cs *containerRuntimeState, run runtime.Status) time.Time {
	clk := w.m.o.Clock
	if !cs.hasRun || cs.run != run.ID {
		start := run.StartedAt
		if start.IsZero() {
			start = clk.Now()
		}
		cs.run, cs.hasRun = run.ID, true
		cs.startup = newProbeState(c.StartupProbe, start, probe.Unknown)
		cs.liveness = newProbeState(c.LivenessProbe, start, probe.Success)
		cs.readiness = newProbeState(c.ReadinessProbe, start, probe.Failure)
		cs.started = cs.startup == nil
	}
	target := probe.Target{Runtime: w.m.o.Runtime, ID: run.ID, Host: w.m.o.NodeIP, Ports: c.Ports}
	if ips := w.podIPs(); len(ips) > 0 {
		// A pod of its own network listens on its own address.
		target.Host = ips[0]
	}
	now := clk.Now()
	var next time.Time
	if !cs.started {
		ps := cs.startup
		if !now.Before(ps.next) {
			switch w.runProbe(ctx, ps, target) {
			case probe.Success:
				cs.started = true
				// Liveness and readiness start counting from now.
				for _, other := range []*probeState{cs.liveness, cs.readiness} {
					if other != nil && other.next.Before(now) {
						other.next = now
					}
				}
			case probe.Failure:
				return w.kill(ctx, pod, cs, ps, run.ID, "startup")
			}
		}
		if !cs.started {
			return ps.next
		}
	}
	if ps := cs.liveness; ps != nil {
		if !now.Before(ps.next) && w.runProbe(ctx, ps, target) == probe.Failure {
			return w.kill(ctx, pod, cs, ps, run.ID, "liveness")
		}
		next = wakeAt(next, ps.next)
	}
	if ps := cs.readiness; ps != nil {
		if !now.Before(ps.next) {
			cs.ready = w.runProbe(ctx, ps, target) == probe.Success
			// Once per spell of failures, not on every failed probe.
			if ps.failed && !ps.reported {
				w.podEvent(pod, api.EventTypeWarning, ReasonUnhealthy, "Readiness probe failed: "+ps.output)
			}
			ps.reported = ps.failed
		}
		next = wakeAt(next, ps.next)
	} else {
		cs.ready = cs.started
	}
	return next
}

// runProbe runs ps once, bounded by its timeout on the agent's clock, and
// returns the verdict after it.
func (w *podWorker) runProbe(ctx context.Context, ps *probeState, target probe.Target) probe.Result {
	clk := w.m.o.Clock
	pctx, cancel := clockTimeout(ctx, clk, ps.timing.Timeout)
	r, out := probe.Run(pctx, ps.spec.ProbeHandler, target)
	cancel()
	ps.next = clk.Now().Add(ps.timing.Period)
	ps.output, ps.failed = out, r == probe.Failure
	return ps.tracker.Observe(r, ps.timing)
}

// kill stops a run whose liveness (or startup) probe failed, after its
// preStop hook, as the kubelet stops it, with the probe's grace if it has
// one, else the pod's, and says when to look again: at once, to restart
// it, or later if the stop failed.
func (w *podWorker) kill(ctx context.Context, pod *api.Pod, cs *containerRuntimeState, ps *probeState, id runtime.ID, which string) time.Time {
	grace := podGrace(pod)
	if ps.spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*ps.spec.TerminationGracePeriodSeconds) * time.Second
	}
	w.m.o.Logger.Info("container failed its probe, killing it", "probe", which, "container", id.String(), "pod", pod.Namespace+"/"+pod.Name)
	w.podEvent(pod, api.EventTypeWarning, ReasonUnhealthy, probeName(which)+" probe failed: "+ps.output)
	w.podEvent(pod, api.EventTypeNormal, ReasonKilling, fmt.Sprintf("Container %s failed %s probe, will be restarted", id.Name, which))
	cs.ready = false
	if err := w.stopRun(ctx, pod, id, grace); err != nil {
		w.log(pod).err("kill container", err)
		return w.backOff()
	}
	return w.m.o.Clock.Now()
}

// clockTimeout is context.WithTimeout on clk, so probe timeouts and hook
// bounds run on the agent's (possibly fake) clock. The returned cancel
// stops the timer and waits for its goroutine.
func clockTimeout(ctx context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(ctx)
	t := clk.NewTimer(d)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-t.C():
			cancel()
		case <-cctx.Done():
		}
	}()
	return cctx, func() {
		cancel()
		t.Stop()
		wg.Wait()
	}
}

// probeName is how events name a probe: "liveness" → "Liveness".
func probeName(which string) string {
	if which == "" {
		return which
	}
	return strings.ToUpper(which[:1]) + which[1:]
}

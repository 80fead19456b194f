package pods

import (
	"time"

	"github.com/cenkalti/backoff/v4"
	"k8s.io/utils/clock"
)

// workerPhase is where a pod worker is in the life of its pod, as the
// kubelet's pod workers keep SyncPod, SyncTerminatingPod and
// SyncTerminatedPod apart. Only the worker's goroutine reads or changes
// it, through the transitions of workerTransitions.
type workerPhase uint8

const (
	// phaseWaiting: no pod yet; Sync or Forget will tell.
	phaseWaiting workerPhase = iota
	// phaseRunning: the pod is admitted and its containers converge to
	// its spec.
	phaseRunning
	// phaseRefused: admission refused the pod; it is reported Failed and
	// nothing of it runs.
	phaseRefused
	// phaseTerminating: the pod is being deleted or evicted; its
	// containers stop and its end is reported.
	phaseTerminating
	// phaseTerminated: stopped and reported; what is left is the
	// chores of an end (the evicted pod's volumes, PodTerminated).
	phaseTerminated
	// phaseCleaning: the pod is forgotten; its runs, sandbox and files
	// are removed.
	phaseCleaning
	// phaseDone: cleaned up; the worker ends.
	phaseDone
)

var workerPhaseNames = [...]string{"Waiting", "Running", "Refused", "Terminating", "Terminated", "Cleaning", "Done"}

func (p workerPhase) String() string {
	if int(p) < len(workerPhaseNames) {
		return workerPhaseNames[p]
	}
	return "workerPhase(?)"
}

// workerEvent is what moves a worker from one phase to another: what it
// was told (Sync, Evict, Forget) or what it found.
type workerEvent uint8

const (
	// eventPod: there is a pod to run (Sync).
	eventPod workerEvent = iota
	// eventRefuse: admission refused the pod.
	eventRefuse
	// eventDelete: the pod has a deletion timestamp.
	eventDelete
	// eventEvict: the pod is evicted.
	eventEvict
	// eventStopped: the pod's containers stopped and its end was
	// reported.
	eventStopped
	// eventForget: the pod is gone for good (Forget).
	eventForget
	// eventCleaned: everything of the pod on the node is removed.
	eventCleaned
)

var workerEventNames = [...]string{"Pod", "Refuse", "Delete", "Evict", "Stopped", "Forget", "Cleaned"}

func (e workerEvent) String() string {
	if int(e) < len(workerEventNames) {
		return workerEventNames[e]
	}
	return "workerEvent(?)"
}

// workerTransitions is the pod worker's state machine: the phase each
// event leads to from each phase. An event a phase does not list leaves
// the worker where it is (a second Sync of a running pod, a deletion of
// one already stopping). Forget leads to Cleaning from everywhere: a pod
// forgotten is stopped with its grace and removed whatever it was doing.
// A deleted pod that had been evicted goes back to Terminating, to
// report that it is gone.
var workerTransitions = map[workerPhase]map[workerEvent]workerPhase{
	phaseWaiting: {
		eventPod:    phaseRunning,
		eventDelete: phaseTerminating,
		eventEvict:  phaseTerminating,
		eventForget: phaseCleaning,
	},
	phaseRunning: {
		eventRefuse: phaseRefused,
		eventDelete: phaseTerminating,
		eventEvict:  phaseTerminating,
		eventForget: phaseCleaning,
	},
	phaseRefused: {
		eventDelete: phaseTerminating,
		eventEvict:  phaseTerminating,
		eventForget: phaseCleaning,
	},
	phaseTerminating: {
		eventStopped: phaseTerminated,
		eventForget:  phaseCleaning,
	},
	phaseTerminated: {
		eventDelete: phaseTerminating,
		eventForget: phaseCleaning,
	},
	phaseCleaning: {
		eventCleaned: phaseDone,
	},
	phaseDone: {},
}

// transition is the phase event leads to from p, and whether the event
// changes anything there.
func transition(p workerPhase, e workerEvent) (workerPhase, bool) {
	next, ok := workerTransitions[p][e]
	return next, ok
}

// Retry of a worker whose runtime or reporter failed: soon at first,
// then less and less often, so that an API server that is down is not
// called by every pod of the node every few seconds.
const (
	errorBackOffInitial = time.Second
	errorBackOffMax     = time.Minute
)

// errorBackOff is a worker's back-off after failures, on the agent's
// clock: 1 s, 2 s, 4 s, … up to a minute, back to 1 s after a sync that
// did not fail.
type errorBackOff struct{ b *backoff.ExponentialBackOff }

func newErrorBackOff(clk clock.PassiveClock) errorBackOff {
	b := &backoff.ExponentialBackOff{
		InitialInterval: errorBackOffInitial,
		Multiplier:      2,
		MaxInterval:     errorBackOffMax,
		// The workers of a node fail together when its API server is
		// away; they are few, and a fake clock must know when each
		// tries again.
		RandomizationFactor: 0,
		MaxElapsedTime:      0, // never give up
		Stop:                backoff.Stop,
		Clock:               clk,
	}
	b.Reset()
	return errorBackOff{b}
}

// next is when to try again after a failure now.
func (e errorBackOff) next() time.Time {
	return e.b.Clock.Now().Add(e.b.NextBackOff())
}

// reset starts the back-off over, after a sync that did not fail.
func (e errorBackOff) reset() { e.b.Reset() }

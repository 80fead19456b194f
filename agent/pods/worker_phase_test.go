package pods

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// The worker's transitions, phase by phase: the phase each event leads
// to, or "" where the event leaves the worker where it is.
func TestWorkerTransitions(t *testing.T) {
	events := []workerEvent{eventPod, eventRefuse, eventDelete, eventEvict, eventStopped, eventForget, eventCleaned}
	tests := []struct {
		from workerPhase
		// to, by event in the order of events.
		to [7]string
	}{
		{phaseWaiting, [7]string{"Running", "", "Terminating", "Terminating", "", "Cleaning", ""}},
		{phaseRunning, [7]string{"", "Refused", "Terminating", "Terminating", "", "Cleaning", ""}},
		{phaseRefused, [7]string{"", "", "Terminating", "Terminating", "", "Cleaning", ""}},
		{phaseTerminating, [7]string{"", "", "", "", "Terminated", "Cleaning", ""}},
		{phaseTerminated, [7]string{"", "", "Terminating", "", "", "Cleaning", ""}},
		{phaseCleaning, [7]string{"", "", "", "", "", "", "Done"}},
		{phaseDone, [7]string{"", "", "", "", "", "", ""}},
	}
	if len(tests) != len(workerPhaseNames) || len(events) != len(workerEventNames) {
		t.Fatalf("the table covers %d phases and %d events, not %d and %d", len(tests), len(events), len(workerPhaseNames), len(workerEventNames))
	}
	for _, tt := range tests {
		for i, e := range events {
			next, ok := transition(tt.from, e)
			got := ""
			if ok {
				got = next.String()
			}
			if got != tt.to[i] {
				t.Errorf("%s on %s: got %q, want %q", tt.from, e, got, tt.to[i])
			}
		}
	}
}

// Every phase but Done can be forgotten and cleaned up, which ends the
// worker, and nothing leads back to Waiting or out of Done.
func TestWorkerPhasesEnd(t *testing.T) {
	for p := range workerPhase(len(workerPhaseNames)) {
		for e := range workerEvent(len(workerEventNames)) {
			if next, ok := transition(p, e); ok && next == phaseWaiting {
				t.Errorf("%s on %s leads back to Waiting", p, e)
			}
		}
		if p == phaseDone {
			continue
		}
		q := p
		if next, ok := transition(q, eventForget); ok {
			q = next
		}
		if q != phaseCleaning {
			t.Errorf("%s forgotten: %s, want Cleaning", p, q)
		}
		if next, _ := transition(q, eventCleaned); next != phaseDone {
			t.Errorf("%s cleaned: %s, want Done", q, next)
		}
	}
}

// The back-off after failures doubles from a second to a minute on the
// agent's clock, and starts over once reset.
func TestErrorBackOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b := newErrorBackOff(clk)
	var got []time.Duration
	for range 9 {
		got = append(got, b.next().Sub(clk.Now()))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("waits %v, want %v seconds", got, want)
		}
	}
	clk.Step(time.Hour)
	b.reset()
	if d := b.next().Sub(clk.Now()); d != errorBackOffInitial {
		t.Errorf("after reset: %v, want %v", d, errorBackOffInitial)
	}
}

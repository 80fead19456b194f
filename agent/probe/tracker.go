package probe

import (
	"time"

	"github.com/berth-dev/berth/api"
)

// Kubernetes' defaults for a probe's timing fields.
const (
	DefaultPeriod           = 10 * time.Second
	DefaultTimeout          = 1 * time.Second
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
)

// Timing is a probe's timing with the defaults filled in.
type Timing struct {
	InitialDelay     time.Duration
	Period           time.Duration
	Timeout          time.Duration
	SuccessThreshold int
	FailureThreshold int
}

// TimingOf reads a probe's timing fields, zero meaning the default.
func TimingOf(p *api.Probe) Timing {
	t := Timing{
		InitialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		Period:           time.Duration(p.PeriodSeconds) * time.Second,
		Timeout:          time.Duration(p.TimeoutSeconds) * time.Second,
		SuccessThreshold: int(p.SuccessThreshold),
		FailureThreshold: int(p.FailureThreshold),
	}
	if t.Period <= 0 {
		t.Period = DefaultPeriod
	}
	if t.Timeout <= 0 {
		t.Timeout = DefaultTimeout
	}
	if t.SuccessThreshold <= 0 {
		t.SuccessThreshold = DefaultSuccessThreshold
	}
	if t.FailureThreshold <= 0 {
		t.FailureThreshold = DefaultFailureThreshold
	}
	return t
}

// Tracker turns the results of successive probes into a verdict: the
// verdict changes only after SuccessThreshold successes or
// FailureThreshold failures in a row, so one slow answer does not restart
// a container. Unknown results leave the counts as they are.
type Tracker struct {
	verdict   Result
	successes int
	failures  int
}

// NewTracker starts at initial: Failure for readiness (not ready until
// shown), Success for liveness (alive until shown otherwise), Unknown for
// a startup probe.
func NewTracker(initial Result) *Tracker {
	return &Tracker{verdict: initial}
}

// Verdict is the current verdict.
func (t *Tracker) Verdict() Result { return t.verdict }

// Observe records one result under timing's thresholds and returns the
// verdict after it.
func (t *Tracker) Observe(r Result, timing Timing) Result {
	switch r {
	case Success:
		t.failures = 0
		t.successes++
		if t.successes >= timing.SuccessThreshold {
			t.verdict = Success
		}
	case Failure:
		t.successes = 0
		t.failures++
		if t.failures >= timing.FailureThreshold {
			t.verdict = Failure
		}
	}
	return t.verdict
}

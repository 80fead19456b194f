package plan

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/apply"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/store"
)

// Options say what a plan is of.
type Options struct {
	// Source is the Source whose revision is planned: its objects missing
	// from the revision are pruned. Empty plans as `berth apply` applies:
	// objects owned by api, nothing pruned.
	Source string
	// Revision names the revision in the report.
	Revision string
	// Clock is when the plan starts; the real clock when nil. The
	// simulation runs on a fake clock of its own from that time.
	Clock clock.PassiveClock
	// Scheduler tunes the scheduler's core as the server's is tuned.
	Scheduler sched.FrameworkOptions
}

// Run plans objs (a revision, decoded, with the errors its decoding
// found) against the live store, which it never writes: everything
// happens on a fork of it. When ctx ends before the simulation settles,
// the report says it is incomplete and fails. The error is for a store
// that could not be read.
func Run(ctx context.Context, live *store.Store, objs []*api.Decoded, decodeErrs api.ErrorList, opts Options) (*Report, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	started := time.Now()
	clk := clocktesting.NewFakeClock(opts.Clock.Now())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	fork := live.Fork(store.Options{Clock: clk, Logger: quiet})
	defer fork.Close()
	// The fork as it was forked, which its writes do not change: what
	// the plan's pods are counted against.
	before := fork.Snapshot()
	rep := &Report{Revision: opts.Revision, StoreRevision: before.Revision(), Changes: []Change{}}
	defer func() {
		rep.Fits = len(rep.Failures()) == 0
		rep.Elapsed = time.Since(started).Round(time.Millisecond).String()
	}()

	name := opts.Source
	if name == "" {
		name = string(api.SourceTypeAPI)
	}
	desired, errs := apply.Prepare(name, objs, decodeErrs, nil)
	if len(errs) > 0 {
		rep.Errors = errorLines(errs)
		return rep, nil
	}
	applier := apply.New(fork, apply.Options{Clock: clk, Logger: quiet})
	// The CRDs the revision's objects need go in first, as the applier
	// applies them; the fork serves their kinds, the process does not.
	first, refused, err := applier.StageCRDs(ctx, name, desired)
	if err != nil {
		return nil, fmt.Errorf("plan: stage the revision's CustomResourceDefinitions: %w", err)
	}
	var staged *apply.Plan
	if first == nil || len(first.Errors) == 0 {
		if _, err := fork.Txn(ctx, func(tx *store.Txn) error {
			var (
				err  error
				more []apply.Refusal
			)
			staged, more, err = applier.Stage(tx, name, desired, opts.Source != "")
			refused = append(refused, more...)
			return err
		}); err != nil {
			return nil, fmt.Errorf("plan: stage the revision: %w", err)
		}
	} else {
		staged = first
	}
	if len(staged.Errors) > 0 {
		rep.Errors = errorLines(staged.Errors)
		return rep, nil
	}
	for _, r := range refused {
		rep.Refusals = append(rep.Refusals, Finding{Object: r.Key.String(), Message: r.Err.Error()})
	}
	var steps []apply.Step
	if first != nil {
		steps = append(steps, first.Steps...)
	}
	for _, s := range append(steps, staged.Steps...) {
		if s.Action == apply.ActionUnchanged {
			continue
		}
		rep.Changes = append(rep.Changes, Change{Action: string(s.Action), Object: s.Key.String(), Fields: s.Fields})
	}

	sim, err := simulate(ctx, before, fork, clk, opts.Scheduler)
	if err != nil {
		return nil, err
	}
	rep.Incomplete = sim.incomplete
	rep.Pods = sim.counts
	rep.Unplaceable = sim.unplaced()
	snap := fork.Snapshot()
	if rep.PendingClaims, err = pendingClaims(snap, rep.StoreRevision); err != nil {
		return nil, err
	}
	if rep.EmptyServices, err = emptyServices(snap, staged.Steps); err != nil {
		return nil, err
	}
	if rep.Rollouts, err = rollouts(snap, staged.Steps, sim); err != nil {
		return nil, err
	}
	if planned != nil {
		planned()
	}
	rep.Nodes, rep.Total = capacity(sim.sched.Nodes())
	return rep, nil
}

// planned, when set (by the benchmark), is called at the end of a plan
// that ran its simulation, while its fork still holds everything it wrote:
// the moment the plan holds the most memory that is not garbage.
var planned func()

func errorLines(errs api.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

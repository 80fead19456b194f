package apply

import (
	"context"
	"errors"

	"github.com/berth-dev/berth/store"
)

// Refusal is a write of a staged revision that admission refused: a
// quota exceeded, a LimitRange bound broken, a field the store rejects.
type Refusal struct {
	Key Key
	Err error
}

// Stage writes the prepared objects of a revision of the named source
// through tx as Apply would (the same reads, the same Diff, the same
// writes), without the Source's status, the prune guard or the memory of
// what the source applied, and it goes on past a write admission refuses,
// listing it: a plan wants every refusal, not the first. With prune false
// the source's objects missing from the revision are left alone, as
// `berth apply` leaves them. A plan with Errors is returned unwritten; the
// error is the store's.
func (a *Applier) Stage(tx *store.Txn, name string, desired []*Desired, prune bool) (*Plan, []Refusal, error) {
	in, err := readInput(tx, name, desired, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	plan := Diff(in)
	if len(plan.Errors) > 0 {
		return plan, nil, nil
	}
	var refused []Refusal
	kept := plan.Steps[:0:0]
	for _, s := range plan.Steps {
		if !prune && (s.Action == ActionPrune || s.Action == ActionKeep) {
			continue
		}
		if s.Action == ActionUpdate && len(s.Fields) == 0 {
			s.Fields = changedFields(s.Live, s.Object)
		}
		err := a.write(tx, name, s)
		switch {
		case err == nil:
			kept = append(kept, s)
		case store.IsForbidden(err) || errors.Is(err, store.ErrInvalid):
			refused = append(refused, Refusal{Key: s.Key, Err: err})
		default:
			return nil, nil, err
		}
	}
	plan.Steps = kept
	return plan, refused, nil
}

// StageCRDs does for a plan what Apply does before a revision's objects:
// the CRDs whose kinds the desired custom resources need, and that the
// store does not serve yet (or serves with another spec), are staged in
// a transaction of their own (nothing pruned), and the custom resources
// get the kinds the store then serves, so that the revision's Stage can
// write them. A fork serves the kinds of the CRDs written to it itself,
// at its commit, where a real store waits for nobody either: Apply's
// wait for Established has nothing to wait for here. The plan is nil
// when no CRD goes first.
func (a *Applier) StageCRDs(ctx context.Context, name string, desired []*Desired) (*Plan, []Refusal, error) {
	crds := a.unestablished(name, desired)
	if len(crds) == 0 {
		return nil, nil, nil
	}
	var (
		plan    *Plan
		refused []Refusal
	)
	if _, err := a.store.Txn(ctx, func(tx *store.Txn) error {
		var err error
		plan, refused, err = a.Stage(tx, name, crds, false)
		return err
	}); err != nil {
		return nil, nil, err
	}
	if len(plan.Errors) == 0 {
		a.served(desired)
	}
	return plan, refused, nil
}

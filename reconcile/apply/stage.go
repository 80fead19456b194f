package apply

import (
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

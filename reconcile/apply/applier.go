package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
)

// Options tune an Applier. The zero value is usable.
type Options struct {
	// Clock stamps sync times and events; the real clock when nil. When
	// it is a clock.Clock it also times the wait for the CRDs a revision
	// applies first (EstablishTimeout); otherwise the real clock does.
	Clock clock.PassiveClock
	// Logger receives what the applier does; slog.Default() when nil.
	Logger *slog.Logger
	// Events records drift corrections and adoptions; nil: a writer of
	// the applier's own (tests).
	Events *event.Recorder
	// OnDrift, when set, is told of each drift correction once it has
	// committed, with the source, the object and the event's message. It
	// must not block (the notifications queue it).
	OnDrift func(source string, key Key, message string)
}

// Applier applies the revisions of sources to a store, one transaction
// per revision, and remembers what each source last applied so that a
// change made outside the source can be reverted at once (Correct).
type Applier struct {
	store *store.Store
	clock clock.PassiveClock
	// waits times the wait for CRDs to be Established.
	waits clock.Clock
	log   *slog.Logger

	mu      sync.Mutex
	sources map[string]*sourceState
	// events records drift corrections and adoptions in the transaction
	// that made them.
	events *event.Recorder
	// onDrift is Options.OnDrift.
	onDrift func(source string, key Key, message string)
}

// sourceState is what the applier keeps per source. mu serialises the
// source's applies and drift corrections, so that a correction never acts
// on a state the source is replacing.
type sourceState struct {
	mu       sync.Mutex
	revision string
	// applied is the decoded object of each key the source last applied,
	// shared with the source's decode cache: the object the source wants
	// is prepared from it when needed, so the applier keeps no copy of its
	// own of every object.
	applied map[Key]*api.Decoded
	// seen is the resourceVersion of each applied object when the source
	// last wrote or checked it.
	seen map[Key]string
	// failure is the revision, reason and message of the failed sync last
	// logged as a warning, so that its retries are logged at debug; empty
	// after a success.
	failure string
}

// New returns an Applier over a store.
func New(s *store.Store, opts Options) *Applier {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Events == nil {
		opts.Events = event.NewWriter(s, event.Options{Clock: opts.Clock, Logger: opts.Logger}).Recorder(EventComponent, "")
	}
	waits, ok := opts.Clock.(clock.Clock)
	if !ok {
		waits = clock.RealClock{}
	}
	return &Applier{store: s, clock: opts.Clock, waits: waits, log: opts.Logger, sources: map[string]*sourceState{},
		events: opts.Events, onDrift: opts.OnDrift}
}

func (a *Applier) state(name string) *sourceState {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.sources[name]
	if st == nil {
		st = &sourceState{}
		a.sources[name] = st
	}
	return st
}

// Result is what one Apply did.
type Result struct {
	// Revision is the revision attempted.
	Revision string
	// Ready, Reason and Message are the Source's Ready condition after it.
	Ready   bool
	Reason  string
	Message string
	// Errors are the errors that rejected the revision.
	Errors api.ErrorList
	Counts Counts
	// StoreRevision is the store revision the writes got; 0 when nothing
	// but the Source status was written.
	StoreRevision uint64
	// Commit describes the revision's git commit, when the source said.
	Commit *api.SourceCommit

	// started is when Apply began, for the status's sync duration.
	started time.Time
}

// ApplyOptions say why an Apply runs.
type ApplyOptions struct {
	// Request is the value of the Source's reconcile-requested-at
	// annotation this sync answers; it is copied to
	// status.lastHandledReconcileAt.
	Request string
	// Wait says a health check follows: a revision applied leaves the
	// Source Ready=Unknown (Progressing) rather than Ready=True, so that
	// nothing that depends on it starts before its objects are healthy.
	Wait bool
}

// rejected aborts a transaction whose revision cannot be applied.
type rejected struct {
	reason  string
	errs    api.ErrorList
	message string
}

func (r *rejected) Error() string { return r.message }

// Apply applies one revision of the named source as SPEC §3 says: a
// revision the source could not read (rev.Err) or that has any error
// (decoding, validation, duplicates, ownership, namespaces, immutable
// fields) changes nothing but the Source status, which lists every error;
// one that would prune more than half of the source's objects is held
// back by the prune guard unless the Source allows it; any other is
// written in one store transaction together with the Source status. The
// Source object must exist. An error is returned only when the store
// failed; a rejected revision is a Result with Ready false.
func (a *Applier) Apply(ctx context.Context, name string, rev source.Revision, opts ApplyOptions) (Result, error) {
	st := a.state(name)
	st.mu.Lock()
	defer st.mu.Unlock()

	res := Result{Revision: rev.ID, Commit: rev.Commit, started: a.clock.Now()}
	if rev.Err != nil {
		res.Reason = api.ReasonFetchFailed
		res.Message = fmt.Sprintf("cannot read the source: %s; still at revision %s", truncate(rev.Err.Error(), maxFetchErrorLen), orNone(st.revision))
		return res, a.writeStatus(ctx, name, st, &res, opts)
	}
	desired, errs := Prepare(name, rev.Objects, rev.Errors, st.applied)
	if len(errs) > 0 {
		res.Reason, res.Errors = api.ReasonInvalidRevision, errs
		res.Message = rejectedMessage(rev.ID, st.revision, errs)
		return res, a.writeStatus(ctx, name, st, &res, opts)
	}

	// The CRDs whose kinds the revision's objects need go in first.
	var first Counts
	var firstRev uint64
	if crds := a.unestablished(name, desired); len(crds) > 0 {
		var err error
		if first, firstRev, err = a.establish(ctx, name, rev.ID, st, crds, desired); err != nil {
			return a.failed(ctx, name, st, res, opts, err)
		}
	}

	var plan *Plan
	storeRev, err := a.store.Txn(ctx, func(tx *store.Txn) error {
		src, err := getSource(tx, name)
		if err != nil {
			return err
		}
		in, err := readInput(tx, name, desired, st.applied, st.seen)
		if err != nil {
			return err
		}
		plan = Diff(in)
		cycles, err := managedCycles(tx, name, desired)
		if err != nil {
			return err
		}
		plan.Errors = append(plan.Errors, cycles...)
		if len(plan.Errors) > 0 {
			return &rejected{reason: api.ReasonInvalidRevision, errs: plan.Errors, message: rejectedMessage(rev.ID, st.revision, plan.Errors)}
		}
		if plan.MassPrune() && !src.Spec.AllowMassPrune && src.Annotations[api.AnnotationAllowPrune] != rev.ID {
			return &rejected{reason: api.ReasonPruneGuard, message: guardMessage(name, rev.ID, st.revision, plan)}
		}
		if err := a.execute(tx, name, plan); err != nil {
			return err
		}
		plan.Counts = plan.Counts.after(first)
		res.Ready, res.Reason, res.Counts = true, api.ReasonSucceeded, plan.Counts
		res.Message = appliedMessage(rev.ID, plan.Counts)
		return a.updateStatus(tx, src, &res, opts, len(desired))
	})
	if err != nil {
		return a.failed(ctx, name, st, res, opts, err)
	}
	switch {
	case plan.Counts.Created+plan.Counts.Updated+plan.Counts.Pruned > first.Created+first.Updated:
		res.StoreRevision = storeRev
	case first.Created+first.Updated > 0:
		res.StoreRevision = firstRev
	}
	applied := make(map[Key]*api.Decoded, len(desired))
	for _, d := range desired {
		applied[d.Key] = d.Decoded
	}
	seen := make(map[Key]string, len(desired))
	written := fmt.Sprint(storeRev)
	for _, s := range plan.Steps {
		switch s.Action {
		case ActionCreate, ActionUpdate:
			seen[s.Key] = written
		case ActionUnchanged:
			seen[s.Key] = s.Live.GetResourceVersion()
		}
		if s.From != "" {
			a.log.Info("adopted an object of a deleted source", "source", name, "object", s.Key.String(), "from", s.From)
		}
	}
	st.applied, st.seen, st.revision, st.failure = applied, seen, rev.ID, ""
	a.log.Info("applied revision", "source", name, "revision", rev.ID, "created", plan.Counts.Created,
		"updated", plan.Counts.Updated, "pruned", plan.Counts.Pruned, "unchanged", plan.Counts.Unchanged)
	return res, nil
}

// failed ends an Apply whose writes failed: a revision rejected, or
// refused by admission, changes the Source status only; any other error
// is the store's.
func (a *Applier) failed(ctx context.Context, name string, st *sourceState, res Result, opts ApplyOptions, err error) (Result, error) {
	var rej *rejected
	switch {
	case errors.As(err, &rej):
		res.Reason, res.Errors, res.Message = rej.reason, rej.errs, rej.message
		return res, a.writeStatus(ctx, name, st, &res, opts)
	case store.IsForbidden(err):
		// Admission (a quota) refused an object: the revision cannot go in
		// until the quota or the revision changes; say so on the Source.
		res.Reason = api.ReasonForbidden
		res.Message = fmt.Sprintf("revision %s refused: %v; still at revision %s", res.Revision, err, orNone(st.revision))
		return res, a.writeStatus(ctx, name, st, &res, opts)
	}
	return Result{Revision: res.Revision}, fmt.Errorf("apply revision %s of source %s: %w", res.Revision, name, err)
}

// readInput reads what the plan needs from the transaction: the source's
// inventory, the stored object of every desired key, and the namespaces
// the objects name. It prepares what the plan will look at of the objects
// the source applied before: a desired object that is the same as then
// and still stored as the source last wrote or checked it (seen) is
// neither copied nor compared, so an unchanged revision costs a few map
// lookups per object.
func readInput(tx *store.Txn, name string, desired []*Desired, previous map[Key]*api.Decoded, seen map[Key]string) (Input, error) {
	in := Input{
		Source:     name,
		Desired:    desired,
		Seen:       seen,
		Namespaces: map[string]*api.Namespace{},
	}
	if previous != nil {
		in.Previous = map[Key]api.Object{}
	}
	// The source's objects come from its index in one pass; only a desired
	// object it does not hold (new, or not yet the source's) is looked up
	// on its own. Most revisions change few objects, and ten thousand
	// lookups cost more than the whole rest of the plan.
	inv, err := inventory(tx, name)
	if err != nil {
		return in, err
	}
	in.Inventory = inv
	in.Live = make(map[Key]api.Object, max(len(inv), len(desired)))
	for _, obj := range inv {
		in.Live[KeyOf(obj)] = obj
	}
	for _, d := range desired {
		live := in.Live[d.Key]
		if live == nil {
			obj, err := tx.Get(d.Key.Kind, d.Key.Namespace, d.Key.Name)
			switch {
			case err == nil:
				live = obj
				in.Live[d.Key] = live
			case !store.IsNotFound(err):
				return in, err
			}
		}
		if err := checkClaim(tx, &in, live); err != nil {
			return in, err
		}
		if !unchanged(d, live, seen) {
			d.prepare(name)
			switch prev := previous[d.Key]; {
			case d.Same:
				in.Previous[d.Key] = d.Object
			case prev != nil:
				in.Previous[d.Key] = prepared(name, prev)
			}
		}
		if d.Key.Kind.Namespaced {
			if _, seen := in.Namespaces[d.Key.Namespace]; !seen {
				ns, err := tx.Get(namespaceKind, "", d.Key.Namespace)
				switch {
				case err == nil:
					in.Namespaces[d.Key.Namespace] = ns.(*api.Namespace)
				case store.IsNotFound(err):
					in.Namespaces[d.Key.Namespace] = nil
				default:
					return in, err
				}
			}
		}
	}
	return in, nil
}

// managedCycles refuses the Sources a revision of the named source
// declares that would manage the source itself: the source, or one of
// the Sources that manage it, directly or through others (their
// berth.dev/source annotation).
func managedCycles(tx *store.Txn, name string, desired []*Desired) (api.ErrorList, error) {
	var errs api.ErrorList
	var managers []string // name's manager, its manager's, …
	looked := false
	for _, d := range desired {
		if d.Key.Kind != sourceKind {
			continue
		}
		if !looked {
			looked = true
			seen := map[string]bool{name: true}
			for cur := name; ; {
				obj, err := tx.Get(sourceKind, "", cur)
				if store.IsNotFound(err) {
					break
				}
				if err != nil {
					return nil, err
				}
				m := obj.GetAnnotations()[api.AnnotationSource]
				if m == "" || m == string(api.SourceTypeAPI) || seen[m] {
					break
				}
				seen[m] = true
				managers = append(managers, m)
				cur = m
			}
		}
		child := d.Key.Name
		var why string
		switch {
		case child == name:
			why = fmt.Sprintf("source %s cannot declare its own Source", name)
		case slices.Contains(managers, child):
			chain := slices.Clone(managers[:slices.Index(managers, child)+1])
			slices.Reverse(chain) // child, …, name's manager
			why = fmt.Sprintf("Source %s manages source %s (%s -> %s): declaring it here would make a cycle", child, name, strings.Join(append(chain, name), " -> "), child)
		default:
			continue
		}
		errs = append(errs, d.Decoded.Errors(field.ErrorList{field.Forbidden(field.NewPath("metadata", "name"), why)})...)
	}
	return errs, nil
}

// checkClaim notes in in.Gone the source that claims a live object, when
// it is another source than in.Source and its Source object no longer
// exists. Each source is looked up once.
func checkClaim(tx *store.Txn, in *Input, live api.Object) error {
	if live == nil {
		return nil
	}
	owner, ok := live.GetAnnotations()[api.AnnotationSource]
	if !ok || owner == in.Source || owner == string(api.SourceTypeAPI) {
		return nil
	}
	if _, looked := in.Gone[owner]; looked {
		return nil
	}
	_, err := tx.Get(sourceKind, "", owner)
	if err != nil && !store.IsNotFound(err) {
		return err
	}
	if in.Gone == nil {
		in.Gone = map[string]bool{}
	}
	in.Gone[owner] = err != nil
	return nil
}

// unchanged reports whether a desired object is what the source applied
// last time and the stored object is still as the source last wrote or
// checked it: then nothing about it needs a closer look.
func unchanged(d *Desired, live api.Object, seen map[Key]string) bool {
	if live == nil || !d.Same {
		return false
	}
	rv := live.GetResourceVersion()
	return rv != "" && seen[d.Key] == rv
}

var namespaceKind = api.KindOf(&api.Namespace{})

// inventory lists every object whose berth.dev/source annotation names
// the source, through the store's source index.
func inventory(r reader, name string) ([]api.Object, error) {
	var out []api.Object
	for _, k := range api.AllKinds() { // custom resources too
		if k == eventKind {
			continue
		}
		objs, err := r.List(k, store.Filter{Index: store.IndexSource, Value: name})
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// execute writes a plan: creates and updates in order, then prunes, with
// an event for every adoption and every drift reverted.
func (a *Applier) execute(tx *store.Txn, name string, plan *Plan) error {
	for _, s := range plan.Steps {
		if err := a.write(tx, name, s); err != nil {
			return err
		}
	}
	return nil
}

// write makes one step of a plan.
func (a *Applier) write(tx *store.Txn, name string, s Step) error {
	switch s.Action {
	case ActionCreate:
		// The object is the plan's own copy: nothing else keeps it.
		if _, err := tx.Create(s.Object); err != nil {
			return err
		}
	case ActionUpdate:
		stored, err := tx.Update(s.Object)
		if err != nil {
			return err
		}
		switch {
		case s.Adopt && s.From != "":
			return a.recordEvent(tx, stored, ReasonAdopted,
				fmt.Sprintf("Source %s adopted %s from source %s, which no longer exists", name, s.Key, s.From))
		case s.Adopt:
			return a.recordEvent(tx, stored, ReasonAdopted,
				fmt.Sprintf("Source %s adopted %s, which had no %s annotation", name, s.Key, api.AnnotationSource))
		case s.Drift:
			return a.recordEvent(tx, stored, ReasonDriftCorrected, driftMessage(name, s.Key, s.Fields))
		}
	case ActionPrune:
		if _, err := tx.Delete(s.Key.Kind, s.Key.Namespace, s.Key.Name, store.DeleteOptions{}); err != nil && !store.IsNotFound(err) {
			return err
		}
	case ActionKeep:
		// Let go, as Flux drops such an object from its inventory:
		// without the source's annotation it is neither pruned nor
		// reverted, counted no more, and free for another source or
		// berth apply to take.
		released := s.Live.DeepCopyObject().(api.Object)
		ann := maps.Clone(released.GetAnnotations())
		delete(ann, api.AnnotationSource)
		released.SetAnnotations(ann)
		stored, err := tx.Update(released)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		why := fmt.Sprintf("it is annotated %s: %s", api.AnnotationPrune, api.PruneDisabled)
		if s.Key.Kind == namespaceKind && api.SystemNamespace(s.Key.Name) {
			why = "it may not be deleted"
		}
		return a.recordEvent(tx, stored, ReasonReleased,
			fmt.Sprintf("Source %s no longer declares %s and %s: it is left as it is and is no longer the source's", name, s.Key, why))
	}
	return nil
}

// Inventory lists the objects the named source owns now, Sources it
// declares included.
func (a *Applier) Inventory(name string) ([]api.Object, error) {
	return inventory(a.store.Snapshot(), name)
}

// reader is what the applier reads from: a transaction or a snapshot.
type reader interface {
	Get(k *api.Kind, namespace, name string) (api.Object, error)
	List(k *api.Kind, f store.Filter) ([]api.Object, error)
}

func getSource(r reader, name string) (*api.Source, error) {
	obj, err := r.Get(sourceKind, "", name)
	if err != nil {
		return nil, fmt.Errorf("source object: %w", err)
	}
	return obj.(*api.Source), nil
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

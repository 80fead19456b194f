package apply

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/api"
)

// Action is what applying a revision does to one object.
type Action string

// Actions, in the words of the Source's status message.
const (
	ActionCreate    Action = "create"
	ActionUpdate    Action = "update"
	ActionUnchanged Action = "unchanged"
	ActionPrune     Action = "prune"
	// ActionKeep: the revision no longer holds the object, but it is
	// annotated berth.dev/prune: disabled (or may not be deleted): it is
	// left in place and let go, no longer the source's.
	ActionKeep Action = "keep"
)

// Step is one decision of a Plan.
type Step struct {
	Action Action
	Key    Key
	// Object is what to write for a create or an update, the live object
	// otherwise.
	Object api.Object
	// Live is the stored object, nil for a create.
	Live api.Object
	// Adopt: the object existed with no source annotation, or with that
	// of a source that no longer exists (From), and the source takes it
	// over.
	Adopt bool
	// From is the source, no longer there, whose stale claim an adoption
	// takes over; empty for an object that had no claim.
	From string
	// Drift: the source declares what it declared last time, yet the
	// stored object differs; the update reverts a change made outside it.
	Drift bool
	// Fields are the paths a drift update reverts.
	Fields []string
}

// Input is what a plan is made from: the revision's objects and what the
// store holds that concerns them. Reading it is the caller's I/O.
type Input struct {
	// Source is the name of the source the revision is from.
	Source string
	// Desired are the revision's objects, from Prepare, in revision order;
	// each one's Object is set, except for a Same object that Seen shows
	// unchanged in the store.
	Desired []*Desired
	// Live holds the stored object of every desired key that exists (and
	// may hold others: the inventory's).
	Live map[Key]api.Object
	// Inventory is every object the store says the source applied (its
	// berth.dev/source annotation names it).
	Inventory []api.Object
	// Previous is what the source last applied, by key; nil when unknown.
	// It may leave out an object that Seen shows unchanged in the store.
	Previous map[Key]api.Object
	// Seen is the resourceVersion each object had when the source last
	// applied or checked it. An object still at that version and declared
	// as before is unchanged without a closer look.
	Seen map[Key]string
	// Namespaces holds the stored Namespace of every namespace a desired
	// object names, when it exists.
	Namespaces map[string]*api.Namespace
	// Gone holds the sources that claim a desired object and whose Source
	// object no longer exists: their claim is stale. api, which `berth
	// apply` names, has no Source object and is never gone.
	Gone map[string]bool
}

// Counts sum a plan up.
type Counts struct {
	Created, Updated, Unchanged, Pruned, Kept, Adopted, Drifted int
}

// Plan is what applying a revision would do: every create, update and
// unchanged object in dependency order, then every prune in reverse
// order; or the errors that reject the revision.
type Plan struct {
	Steps  []Step
	Errors api.ErrorList
	// Owned is how many objects the source held before: the base of the
	// prune guard.
	Owned  int
	Counts Counts
}

// MassPrune reports whether the plan prunes more than half of the
// source's objects, or all of them: what the prune guard holds back.
func (p *Plan) MassPrune() bool {
	n := p.Counts.Pruned
	return n > 0 && (n == p.Owned || 2*n > p.Owned)
}

// Diff decides what applying a revision does. It reads nothing and writes
// nothing, so that every decision of the applier is tested on its own.
//
// An object that exists and names another source (api included, which
// `berth apply` sets) is an error naming both; an object with no source
// annotation is adopted, and the caller records an event saying so, as a
// Kubernetes user expects of `kubectl apply`. So is an object whose
// source has been deleted (in.Gone): a deleted Source leaves its objects
// running, as Flux's Kustomization does with pruning off, and its claim
// must not hold another source back for ever. A namespaced object whose
// namespace neither exists nor is in the revision, or is being deleted, is
// an error. So is an update Kubernetes would refuse (a changed selector).
// Objects in the inventory but not in the revision are pruned, except
// those annotated berth.dev/prune: disabled, the system namespaces (which
// may not be deleted), those already being deleted,
// and those a controller owns (they carry the annotation because their
// owner's template did, and go with their owner).
func Diff(in Input) *Plan {
	p := &Plan{}
	desiredKeys := make(map[Key]bool, len(in.Desired))
	nsInRevision := map[string]bool{}
	for _, d := range in.Desired {
		desiredKeys[d.Key] = true
		if d.Key.Kind == namespaceKind {
			nsInRevision[d.Key.Name] = true
		}
	}

	steps := make([]Step, 0, len(in.Desired))
	for _, d := range in.Desired {
		if errs := checkNamespace(d, in.Namespaces, nsInRevision); len(errs) > 0 {
			p.Errors = append(p.Errors, d.Decoded.Errors(errs)...)
			continue
		}
		live := in.Live[d.Key]
		if live == nil {
			steps = append(steps, Step{Action: ActionCreate, Key: d.Key, Object: d.Object})
			continue
		}
		if unchanged(d, live, in.Seen) {
			// Stored as the source last wrote or checked it, and so
			// annotated as its own: nothing to look at.
			steps = append(steps, Step{Action: ActionUnchanged, Key: d.Key, Object: live, Live: live})
			continue
		}
		owner, annotated := live.GetAnnotations()[api.AnnotationSource]
		from := ""
		if annotated && owner != in.Source {
			if !in.Gone[owner] {
				p.Errors = append(p.Errors, d.Decoded.Errors(field.ErrorList{field.Forbidden(field.NewPath("metadata", "name"), claimedMessage(d.Key, owner, in.Source))})...)
				continue
			}
			from = owner
		}
		prev := in.Previous[d.Key]
		want := merge(d.Object, live, prev)
		if errs := api.ValidateUpdate(storedForm(live), want); len(errs) > 0 {
			p.Errors = append(p.Errors, d.Decoded.Errors(errs)...)
			continue
		}
		s := Step{Key: d.Key, Object: want, Live: live, Adopt: !annotated || from != "", From: from}
		switch {
		case equal(want, live):
			s.Action, s.Object = ActionUnchanged, live
		default:
			s.Action = ActionUpdate
			// The source declares what it declared before: the difference
			// was made outside it.
			if prev != nil && (d.Same || equal(prev, d.Object)) {
				s.Drift = true
				s.Fields = changedFields(live, want)
			}
		}
		steps = append(steps, s)
	}
	steps = byRank(steps)

	var prunes []Step
	for _, obj := range in.Inventory {
		if obj.GetDeletionTimestamp() != nil || api.ControllerOf(obj) != nil {
			continue
		}
		p.Owned++
		key := KeyOf(obj)
		if desiredKeys[key] {
			continue
		}
		a := ActionPrune
		if obj.GetAnnotations()[api.AnnotationPrune] == api.PruneDisabled || key.Kind == namespaceKind && api.SystemNamespace(key.Name) {
			// A system namespace may not be deleted: kept as if annotated.
			a = ActionKeep
		}
		prunes = append(prunes, Step{Action: a, Key: key, Object: obj, Live: obj})
	}
	slices.SortFunc(prunes, func(a, b Step) int { return compareKeys(b.Key, a.Key) })
	p.Steps = append(steps, prunes...)

	if len(p.Errors) > 0 {
		p.Errors.Sort()
		p.Steps = nil
		return p
	}
	for _, s := range p.Steps {
		switch s.Action {
		case ActionCreate:
			p.Counts.Created++
		case ActionUpdate:
			p.Counts.Updated++
		case ActionUnchanged:
			p.Counts.Unchanged++
		case ActionPrune:
			p.Counts.Pruned++
		case ActionKeep:
			p.Counts.Kept++
		}
		if s.Adopt {
			p.Counts.Adopted++
		}
		if s.Drift {
			p.Counts.Drifted++
		}
	}
	return p
}

// claimedMessage refuses an object another source, which still exists,
// claims. Either source giving it up ends the conflict; so does taking
// the claim off, which hands the object over as it runs.
func claimedMessage(key Key, owner, source string) string {
	ns := ""
	if key.Namespace != "" {
		ns = " -n " + key.Namespace
	}
	return fmt.Sprintf("%s exists and is owned by source %q (annotation %s); source %q cannot apply it: remove it from one of the two sources, delete it so that %q creates it, or, if %q no longer declares it, hand it over as it runs with `kubectl annotate %s %s%s %s-`",
		key, owner, api.AnnotationSource, source, source, owner, key.Kind.Singular, key.Name, ns, api.AnnotationSource)
}

// checkNamespace refuses an object whose namespace will not exist, or is
// going, as the API server refuses it.
func checkNamespace(d *Desired, live map[string]*api.Namespace, inRevision map[string]bool) field.ErrorList {
	if d.Key.Kind == nil || !d.Key.Kind.Namespaced {
		return nil
	}
	ns := d.Key.Namespace
	n := live[ns]
	switch {
	case n == nil && !inRevision[ns]:
		return field.ErrorList{field.NotFound(field.NewPath("metadata", "namespace"), ns)}
	case n != nil && n.Terminating():
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "namespace"), fmt.Sprintf("namespace %q is being deleted", ns))}
	}
	return nil
}

// byRank orders steps by their kind's rank, keeping the revision's order
// within a rank: a stable sort in one pass over the steps, each rank
// computed once, since a revision holds few kinds and many objects.
func byRank(steps []Step) []Step {
	ranks := make([]int, len(steps))
	counts := map[int]int{}
	sorted := true
	var last *api.Kind
	r := 0
	for i, s := range steps {
		if i == 0 || s.Key.Kind != last {
			last, r = s.Key.Kind, rank(s.Key.Kind)
		}
		ranks[i] = r
		counts[ranks[i]]++
		if i > 0 && ranks[i] < ranks[i-1] {
			sorted = false
		}
	}
	if sorted {
		return steps
	}
	starts := make(map[int]int, len(counts))
	at := 0
	for _, r := range slices.Sorted(maps.Keys(counts)) {
		starts[r] = at
		at += counts[r]
	}
	out := make([]Step, len(steps))
	for i, s := range steps {
		out[starts[ranks[i]]] = s
		starts[ranks[i]]++
	}
	return out
}

// storedForm is live as a write stores it now: a Secret that a source
// stored before stringData was folded into data at apply holds the keys
// apart, and an immutable one would otherwise look changed.
func storedForm(live api.Object) api.Object {
	if s, ok := live.(*api.Secret); ok && len(s.StringData) > 0 {
		c := s.DeepCopy()
		api.MergeStringData(c)
		return c
	}
	return live
}

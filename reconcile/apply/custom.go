package apply

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/crd"
	"github.com/berth-dev/berth/store"
)

// A revision may hold CustomResourceDefinitions together with objects of
// the kinds they define, as a chart's crds/ and its templates do. Its
// custom resources are checked against the revision's own CRDs (an
// installed CRD the revision does not hold checks the others), as the
// API server would check them once the CRDs are in, so that an invalid
// object holds the whole revision back before anything is written. The
// CRDs whose kinds are not served yet, or served with another spec, are
// then applied first, in a transaction of their own, and the revision
// waits until they are Established (their kinds registered) before the
// rest goes in, as Flux's kustomize-controller applies CRDs in a stage
// before the objects that need them.

var crdKind = api.KindOf(&api.CustomResourceDefinition{})

// customKinds are the valid CRDs of a revision, by the group and kind
// they define (crd.Definitions).
type customKinds map[schema.GroupKind]*crd.Definition

// definition finds what checks a custom resource: its CRD in the
// revision, else the installed one; nil when there is neither.
func (c customKinds) definition(u *unstructured.Unstructured) *crd.Definition {
	if def := c[u.GroupVersionKind().GroupKind()]; def != nil {
		return def
	}
	if k := api.KindOf(u); k != nil {
		return crd.DefinitionOf(k)
	}
	return nil
}

// noDefinition is the error of a custom resource that no CRD defines.
func noDefinition(d *api.Decoded, u *unstructured.Unstructured) *api.Error {
	gvk := u.GroupVersionKind()
	return d.ErrorAt("kind", fmt.Sprintf("Unsupported value: %q: no CustomResourceDefinition serves kind %s in %s: neither this revision nor the cluster has one",
		gvk.Kind, gvk.Kind, gvk.GroupVersion()))
}

// defaultObject applies Kubernetes' defaults to obj; a custom resource
// whose kind is served gets its schema's (its unknown fields pruned), as
// the API server decodes one.
func defaultObject(obj api.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if k := api.KindOf(u); k != nil {
			if v, err := crd.VersionOf(k, u.GroupVersionKind().Version); err == nil {
				v.PruneAndDefault(u.Object)
			}
		}
	}
	api.Default(obj)
}

// EstablishTimeout bounds how long a revision waits for the CRDs it
// applied first to be Established.
const EstablishTimeout = 30 * time.Second

// establishPoll is how often the wait looks again.
const establishPoll = 100 * time.Millisecond

// unestablished returns the CRDs of desired that define the kind of a
// desired custom resource that the store does not serve yet (Prepare
// gave it a kind of the revision's CRD, not the registered one).
func (a *Applier) unestablished(name string, desired []*Desired) []*Desired {
	pending := map[schema.GroupKind]bool{}
	for _, d := range desired {
		if k := d.Key.Kind; k.Custom && a.store.CurrentKind(k) != k {
			pending[k.GVK.GroupKind()] = true
		}
	}
	if len(pending) == 0 {
		return nil
	}
	var out []*Desired
	for _, d := range desired {
		if d.Key.Kind != crdKind {
			continue
		}
		d.prepare(name)
		c := d.Object.(*api.CustomResourceDefinition)
		if pending[schema.GroupKind{Group: c.Spec.Group, Kind: c.Spec.Names.Kind}] {
			out = append(out, d)
		}
	}
	return out
}

// establish applies the CRDs first (created or updated as the revision
// declares them, nothing pruned), waits until each is Established and
// its kind served, and gives the desired custom resources their served
// kinds. A CRD the plan refuses (another source's, say) rejects the
// revision.
func (a *Applier) establish(ctx context.Context, name, revision string, st *sourceState, crds, desired []*Desired) (Counts, uint64, error) {
	var counts Counts
	rev, err := a.store.Txn(ctx, func(tx *store.Txn) error {
		in, err := readInput(tx, name, crds, st.applied, st.seen)
		if err != nil {
			return err
		}
		in.Inventory = nil // prune nothing: the revision's sync does
		plan := Diff(in)
		if len(plan.Errors) > 0 {
			return &rejected{reason: api.ReasonInvalidRevision, errs: plan.Errors, message: rejectedMessage(revision, st.revision, plan.Errors)}
		}
		counts = plan.Counts
		return a.execute(tx, name, plan)
	})
	if err != nil {
		return counts, 0, err
	}
	for _, d := range crds {
		c := d.Object.(*api.CustomResourceDefinition)
		if err := a.waitEstablished(ctx, c); err != nil {
			return counts, rev, &rejected{reason: api.ReasonInvalidRevision,
				message: fmt.Sprintf("revision %s: CustomResourceDefinition %s: %v; still at revision %s", revision, c.Name, err, orNone(st.revision))}
		}
		a.log.Info("applied a CustomResourceDefinition before the objects of its kind", "source", name, "revision", revision, "crd", c.Name)
	}
	a.served(desired)
	return counts, rev, nil
}

// served gives the desired custom resources the kinds the store serves
// once their CRDs are in.
func (a *Applier) served(desired []*Desired) {
	for _, d := range desired {
		if k := d.Key.Kind; k.Custom {
			if cur := a.store.CurrentKind(k); cur != nil {
				d.Key.Kind = cur
			}
		}
	}
}

// after adds to the counts of a revision's plan what applying its CRDs
// first did: the plan saw them unchanged.
func (c Counts) after(first Counts) Counts {
	c.Unchanged -= first.Created + first.Updated
	c.Created += first.Created
	c.Updated += first.Updated
	c.Adopted += first.Adopted
	c.Drifted += first.Drifted
	return c
}

// waitEstablished waits until the stored CRD is Established and serves
// the kind the revision declares, for at most EstablishTimeout of the
// applier's clock.
func (a *Applier) waitEstablished(ctx context.Context, want *api.CustomResourceDefinition) error {
	var why string
	check := func() bool {
		obj, err := a.store.Get(crdKind, "", want.Name)
		if err != nil {
			why = err.Error()
			return false
		}
		c := obj.(*api.CustomResourceDefinition)
		established := false
		for _, cond := range c.Status.Conditions {
			if cond.Type == api.CRDEstablished {
				established = cond.Status == apiextensionsv1.ConditionTrue
				why = fmt.Sprintf("not Established: %s: %s", cond.Reason, cond.Message)
			}
		}
		if !established {
			return false
		}
		if k, ok := a.store.CustomKind(schema.GroupResource{Group: want.Spec.Group, Resource: want.Spec.Names.Plural}); !ok ||
			k.CRD.Name != want.Name || !equality.Semantic.DeepEqual(k.CRD.Spec, want.Spec) {
			why = "Established, but its kind is not served yet"
			return false
		}
		return true
	}
	if check() {
		return nil
	}
	deadline := a.clock.Now().Add(EstablishTimeout)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.waits.After(establishPoll):
		}
		if check() {
			return nil
		}
		if !a.clock.Now().Before(deadline) {
			return fmt.Errorf("%s after %s", why, EstablishTimeout)
		}
	}
}

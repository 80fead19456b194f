package store

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
)

// Custom resources are generic objects (*unstructured.Unstructured) in
// one table. The kinds their CustomResourceDefinitions define follow the
// CRDs the store holds: a write, a load and a follower's replay of a CRD
// register its kind before anyone can see the CRD, so that every control
// plane sharing a backend knows a kind before it meets its first object.
// The store also gives a CRD its NamesAccepted and Established conditions
// as it is written, on every path (the API, a source's apply), and
// deletes a CRD's objects with it.

var crdKind = api.KindOf(&api.CustomResourceDefinition{})

// customKindOf finds the kind this store serves for a custom resource
// whose CRD it holds (the kinds are the process's, and a process may run
// more than one store).
func (tx *Txn) customKindOf(u *unstructured.Unstructured) (*api.Kind, error) {
	k := tx.store.customKindFor(u.GroupVersionKind())
	if k != nil && k.CRD == nil {
		k = nil // a kind a client learned by discovery
	}
	if k != nil {
		if _, err := tx.Get(crdKind, "", k.CRD.Name); err != nil {
			k = nil
		}
	}
	if k == nil {
		gvk := u.GroupVersionKind()
		return nil, fmt.Errorf("%w: no CustomResourceDefinition serves kind %s in %s", ErrInvalid, gvk.Kind, gvk.GroupVersion())
	}
	return k, nil
}

// current returns the kind this store serves for k's resource, so that
// the events of a write carry the kind watchers watch: a custom kind that
// changed is replaced. ok is false when its CRD is gone.
func (tx *Txn) current(k *api.Kind) (*api.Kind, bool) {
	cur := tx.store.CurrentKind(k)
	return cur, cur != nil
}

// crdWritten gives a CRD about to be stored its conditions: its names are
// accepted unless another CRD of its group holds one of them (or a
// built-in kind does), and it is established as soon as they are, since
// the store serves its kind from the commit on.
func (tx *Txn) crdWritten(crd *api.CustomResourceDefinition) error {
	conflict, err := tx.nameConflict(crd)
	if err != nil {
		return err
	}
	now := tx.timestamp()
	accepted := apiextensionsv1.CustomResourceDefinitionCondition{Type: api.CRDNamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: api.ReasonNoConflicts, Message: "no conflicts found"}
	established := apiextensionsv1.CustomResourceDefinitionCondition{Type: api.CRDEstablished, Status: apiextensionsv1.ConditionTrue, Reason: api.ReasonInitialNamesAccepted, Message: "the initial names have been accepted"}
	if conflict != "" {
		accepted.Status, accepted.Reason, accepted.Message = apiextensionsv1.ConditionFalse, api.ReasonNameConflict, conflict
		established.Status, established.Reason, established.Message = apiextensionsv1.ConditionFalse, api.ReasonNotAccepted, "not all names are accepted"
		crd.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{}
	} else {
		crd.Status.AcceptedNames = crd.Spec.Names
		if crd.Status.AcceptedNames.Singular == "" {
			crd.Status.AcceptedNames.Singular = strings.ToLower(crd.Spec.Names.Kind)
		}
	}
	for _, c := range []apiextensionsv1.CustomResourceDefinitionCondition{accepted, established} {
		setCRDCondition(&crd.Status, c, now)
	}
	return nil
}

func setCRDCondition(st *apiextensionsv1.CustomResourceDefinitionStatus, c apiextensionsv1.CustomResourceDefinitionCondition, now metav1.Time) {
	for i := range st.Conditions {
		if st.Conditions[i].Type != c.Type {
			continue
		}
		c.LastTransitionTime = st.Conditions[i].LastTransitionTime
		if st.Conditions[i].Status != c.Status || c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		st.Conditions[i] = c
		return
	}
	c.LastTransitionTime = now
	st.Conditions = append(st.Conditions, c)
}

// nameConflict says which of a CRD's names another kind of its group
// already has, or "".
func (tx *Txn) nameConflict(crd *api.CustomResourceDefinition) (string, error) {
	n := crd.Spec.Names
	names := append([]string{n.Plural, n.Singular, strings.ToLower(n.Kind)}, n.ShortNames...)
	for _, k := range api.Kinds() {
		if k.GVK.Group != crd.Spec.Group {
			continue
		}
		if k.Resource == n.Plural || k.GVK.Kind == n.Kind {
			return fmt.Sprintf("%q is already in use by the built-in %s", n.Plural, k.GVK.Kind), nil
		}
	}
	others, err := tx.List(crdKind, Filter{})
	if err != nil {
		return "", err
	}
	for _, o := range others {
		other := o.(*api.CustomResourceDefinition)
		if other.Name == crd.Name || other.Spec.Group != crd.Spec.Group || !namesAccepted(other) {
			continue
		}
		on := other.Status.AcceptedNames
		taken := map[string]bool{on.Plural: true, on.Singular: true, strings.ToLower(on.Kind): true}
		for _, s := range on.ShortNames {
			taken[s] = true
		}
		for _, name := range names {
			if name != "" && taken[name] {
				return fmt.Sprintf("%q is already in use by %s", name, other.Name), nil
			}
		}
		if on.Kind == n.Kind {
			return fmt.Sprintf("kind %q is already in use by %s", n.Kind, other.Name), nil
		}
	}
	return "", nil
}

// namesAccepted reports whether a CRD's names are accepted: whether the
// store serves its kind.
func namesAccepted(crd *api.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == api.CRDNamesAccepted {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// crdRemoved deletes the objects of a CRD that goes, in its transaction,
// finalizers or not: nothing could serve them any more.
func (tx *Txn) crdRemoved(crd *api.CustomResourceDefinition) error {
	k, ok := tx.store.CustomKind(k8sschema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural})
	if !ok {
		return nil
	}
	objs, err := tx.List(k, Filter{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := tx.remove(k, o); err != nil {
			return err
		}
	}
	return nil
}

// syncCustomKinds registers, or forgets, the kinds of the CRDs ops write.
func syncCustomKinds(ops []Op) {
	for _, op := range ops {
		if op.Kind != crdKind {
			continue
		}
		if op.Object == nil {
			// The name of a CRD is its plural and group.
			plural, group, _ := strings.Cut(op.Name, ".")
			api.RemoveCustomKind(k8sschema.GroupResource{Group: group, Resource: plural})
			continue
		}
		registerCRD(op.Object.(*api.CustomResourceDefinition))
	}
}

// registerCRD registers the kind of a CRD whose names are accepted.
func registerCRD(crd *api.CustomResourceDefinition) {
	gr := k8sschema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
	if !namesAccepted(crd) || api.StorageVersion(crd) == "" {
		if k, ok := api.CustomKind(gr); ok && k.GVK.Kind == crd.Spec.Names.Kind {
			api.RemoveCustomKind(gr)
		}
		return
	}
	api.SetCustomKind(api.CustomKindOf(crd))
}

// registerLoaded registers the kinds of every CRD a table holds, once it
// is loaded.
func registerLoaded(r reader) error {
	objs, err := r.List(crdKind, Filter{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		registerCRD(o.(*api.CustomResourceDefinition))
	}
	return nil
}

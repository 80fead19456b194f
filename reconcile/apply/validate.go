package apply

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/crd"
)

// Desired is one object a revision declares, ready to be written: a copy
// of the decoded object, defaulted, stripped of server-set fields and
// marked with its source, together with where it came from.
type Desired struct {
	Key Key
	// Object is nil, until prepare, for an object that is the very one the
	// source applied last time (Same): most such objects are seen unchanged
	// in the store and never need a copy.
	Object  api.Object
	Decoded *api.Decoded
	// Same: the object is exactly what the source applied last time.
	Same bool
}

// prepare fills in Object for an object Prepare left out.
func (d *Desired) prepare(sourceName string) {
	if d.Object == nil {
		d.Object = prepared(sourceName, d.Decoded)
	}
}

// sourceKind is the kind of Source objects, which a revision may hold
// (app of apps) as long as they make no cycle (managedCycles).
var sourceKind = api.KindOf(&api.Source{})

// Prepare checks a revision's objects on their own, before the store is
// read: the decoder's errors, defaulting and validation of each object,
// kinds a source may not declare, and duplicates. It returns every error
// found, each with its file, document and field, or the objects ready to
// apply, each marked as applied by the named source. The decoded objects
// are not changed (a source shares them with its decode cache): each is
// copied before it is defaulted.
//
// previous is what the source applied last (nil when unknown). An object
// that is the very decoded object applied then (a file the source did not
// decode again) is Same at the cost of a map lookup, and left for prepare
// to copy if it is needed at all; one decoded again equal to it is Same
// too, and neither is validated again, which makes a revision that changes
// one object of thousands cheap. One that is equal to it only once
// prepared (a manifest now spelling out a default) is validated, then
// Same.
func Prepare(sourceName string, objs []*api.Decoded, decodeErrs api.ErrorList, previous map[Key]*api.Decoded) ([]*Desired, api.ErrorList) {
	errs := append(api.ErrorList(nil), decodeErrs...)
	custom := customKinds(crd.Definitions(objs))
	out := make([]*Desired, 0, len(objs))
	kept := make([]*api.Decoded, 0, len(objs))
	for _, d := range objs {
		if d == nil || d.Object == nil {
			continue
		}
		kept = append(kept, d)
		k := api.KindOf(d.Object)
		var def *crd.Definition
		if u, ok := d.Object.(*unstructured.Unstructured); ok {
			if def = custom.definition(u); def == nil {
				errs = append(errs, noDefinition(d, u))
				continue
			}
			k = def.Kind
		}
		key := decodedKey(k, d)
		prev := previous[key]
		if prev == d {
			out = append(out, &Desired{Key: key, Decoded: d, Same: true})
			continue
		}
		obj := d.Object.DeepCopyObject().(api.Object)
		stripServerFields(obj)
		if def != nil {
			// As the API server checks a create of it: its schema's
			// defaults and rules, with the CRD the revision holds
			// when it holds one.
			if e := def.Check(context.Background(), d, obj.(*unstructured.Unstructured)); len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
		} else {
			api.Default(obj)
		}
		if owner, ok := obj.GetAnnotations()[api.AnnotationSource]; ok && owner != sourceName {
			errs = append(errs, d.Errors(field.ErrorList{field.Invalid(
				field.NewPath("metadata", "annotations").Key(api.AnnotationSource), owner,
				fmt.Sprintf("names another source than %q, which applies this manifest; leave the annotation out", sourceName))})...)
		}
		markSource(obj, sourceName)
		// Decoded objects equal as decoded are equal once prepared, and
		// were valid; others may still be equal (a manifest now spelling
		// out a default). Validation sees the object as written, so that
		// its errors name the manifest's own fields (a Secret's
		// stringData), then it takes its stored form.
		same := prev != nil && reflect.DeepEqual(prev.Object, d.Object)
		if !same && def == nil {
			if e := d.Errors(api.Validate(obj)); len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
		}
		api.MergeStringData(obj)
		same = same || (prev != nil && reflect.DeepEqual(prepared(sourceName, prev), obj))
		out = append(out, &Desired{Key: key, Object: obj, Decoded: d, Same: same})
	}
	errs = append(errs, api.DuplicatesAsDefaulted(kept)...)
	if len(errs) > 0 {
		return nil, unique(errs)
	}
	return out, nil
}

// decodedKey is the key a decoded object will have once defaulted: a
// namespaced object that names no namespace goes to "default".
func decodedKey(k *api.Kind, d *api.Decoded) Key {
	ns := d.Object.GetNamespace()
	if k != nil && k.Namespaced && ns == "" {
		ns = api.NamespaceDefault
	}
	return Key{Kind: k, Namespace: ns, Name: d.Object.GetName()}
}

// prepared is what the source applies for a decoded object: a copy,
// stripped of server-set fields, defaulted, marked with the source and in
// its stored form. The decoded object is not changed.
func prepared(sourceName string, d *api.Decoded) api.Object {
	obj := d.Object.DeepCopyObject().(api.Object)
	stripServerFields(obj)
	defaultObject(obj)
	markSource(obj, sourceName)
	api.MergeStringData(obj)
	return obj
}

// unique sorts errors and drops repeats: a source may already have
// reported the duplicates this package checks again.
func unique(errs api.ErrorList) api.ErrorList {
	errs.Sort()
	out := errs[:0]
	seen := make(map[string]bool, len(errs))
	for _, e := range errs {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			out = append(out, e)
		}
	}
	return out
}

// stripServerFields clears what a manifest copied from `get -o yaml` may
// carry but only the server sets, so that it means the same as a clean
// manifest.
func stripServerFields(obj api.Object) {
	obj.SetUID("")
	obj.SetResourceVersion("")
	obj.SetGeneration(0)
	obj.SetCreationTimestamp(zeroTime)
	obj.SetDeletionTimestamp(nil)
	obj.SetDeletionGracePeriodSeconds(nil)
	obj.SetManagedFields(nil)
}

var zeroTime metav1.Time

// markSource sets the annotation that says which source applied obj.
func markSource(obj api.Object, name string) {
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = make(map[string]string, 1)
	}
	ann[api.AnnotationSource] = name
	obj.SetAnnotations(ann)
}

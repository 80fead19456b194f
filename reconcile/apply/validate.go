package apply

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/api"
)

// Desired is one object a revision declares, ready to be written: a copy
// of the decoded object, defaulted, stripped of server-set fields and
// marked with its source, together with where it came from.
type Desired struct {
	Key     Key
	Object  api.Object
	Decoded *api.Decoded
	// Same: the object is exactly what the source applied last time.
	Same bool
}

// sourceKind is the kind of Source objects; a revision may not hold one.
var sourceKind = api.KindOf(&api.Source{})

// Prepare checks a revision's objects on their own, before the store is
// read: the decoder's errors, defaulting and validation of each object,
// kinds a source may not declare, and duplicates. It returns every error
// found, each with its file, document and field, or the objects ready to
// apply, each marked as applied by the named source. The objects are
// defaulted in place: a revision's objects belong to its receiver.
//
// previous is what the source applied last (nil when unknown): an object
// that is, once defaulted, exactly as it was then is not validated again,
// which makes a revision that changes one object of thousands cheap.
func Prepare(sourceName string, objs []*api.Decoded, decodeErrs api.ErrorList, previous map[Key]api.Object) ([]*Desired, api.ErrorList) {
	errs := append(api.ErrorList(nil), decodeErrs...)
	copies := make([]*api.Decoded, 0, len(objs))
	out := make([]*Desired, 0, len(objs))
	for _, d := range objs {
		if d == nil || d.Object == nil {
			continue
		}
		c := d
		copies = append(copies, c)
		k := api.KindOf(c.Object)
		if k == sourceKind {
			errs = append(errs, c.Errors(field.ErrorList{field.Forbidden(field.NewPath("kind"),
				"a source cannot declare Source objects; sources are configured with the server's --source flags")})...)
			continue
		}
		stripServerFields(c.Object)
		api.Default(c.Object)
		if owner, ok := c.Object.GetAnnotations()[api.AnnotationSource]; ok && owner != sourceName {
			errs = append(errs, c.Errors(field.ErrorList{field.Invalid(
				field.NewPath("metadata", "annotations").Key(api.AnnotationSource), owner,
				fmt.Sprintf("names another source than %q, which applies this manifest; leave the annotation out", sourceName))})...)
		}
		markSource(c.Object, sourceName)
		key := Key{Kind: k, Namespace: c.Object.GetNamespace(), Name: c.Object.GetName()}
		same := false
		if prev := previous[key]; prev != nil {
			same = reflect.DeepEqual(prev, c.Object)
		}
		if !same {
			if e := c.Errors(api.Validate(c.Object)); len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
		}
		out = append(out, &Desired{Key: key, Object: c.Object, Decoded: c, Same: same})
	}
	errs = append(errs, api.Duplicates(copies)...)
	if len(errs) > 0 {
		return nil, unique(errs)
	}
	return out, nil
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

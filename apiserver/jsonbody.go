package apiserver

import (
	"encoding/json"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	sjson "sigs.k8s.io/json"

	"github.com/berth-dev/berth/api"
)

// decodeJSONObject decodes a JSON body holding one object of the path's
// kind, with apiVersion and kind spelled as the registry spells them, in
// one strict pass: unknown and duplicate fields refused, as the general
// decoder refuses them. Every status update of every agent comes this
// way, and the general decoder reads such a body five times (validity,
// type meta, stream splitting, a duplicate-key pass into a generic tree,
// the head) before the strict pass that makes the object. ok is false
// when the body needs the general decoder: it is not one such object,
// the pass found a problem (the general decoder then says where), or the
// kind has a field whose own decoder could hide a repeated key.
func (req *resourceRequest) decodeJSONObject(data []byte) (obj api.Object, ok bool) {
	k := req.kind
	if !strictSinglePass(k) {
		return nil, false
	}
	obj = k.New()
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	strictErrs, err := sjson.UnmarshalStrict(data, obj, sjson.DisallowUnknownFields, sjson.DisallowDuplicateFields)
	if err != nil || len(strictErrs) > 0 {
		return nil, false
	}
	if obj.GetObjectKind().GroupVersionKind() != k.GVK || len(obj.GetManagedFields()) > 0 {
		// managedFields hold raw objects (fieldsV1) the pass does not
		// check for repeated keys.
		return nil, false
	}
	if req.ignoresStatus() {
		// As the general decoder, which drops status before decoding.
		if f := reflect.ValueOf(obj).Elem().FieldByName("Status"); f.IsValid() {
			f.SetZero()
		}
	}
	return obj, true
}

// scalarJSON are the types with their own JSON decoding that the API's
// types use for single values (a string or a number): their decoders
// read no object whose keys could repeat.
var scalarJSON = map[reflect.Type]bool{
	reflect.TypeFor[resource.Quantity]():  true,
	reflect.TypeFor[metav1.Time]():        true,
	reflect.TypeFor[metav1.MicroTime]():   true,
	reflect.TypeFor[metav1.Duration]():    true,
	reflect.TypeFor[intstr.IntOrString](): true,
}

var singlePass sync.Map // *api.Kind → bool

// strictSinglePass reports whether one strict pass over a body of kind k
// finds every repeated key: no type in it decodes an object by its own
// decoder (a raw message would, and its keys go unchecked).
func strictSinglePass(k *api.Kind) bool {
	if v, ok := singlePass.Load(k); ok {
		return v.(bool)
	}
	ok := checkedByStrictPass(reflect.TypeOf(k.New()).Elem(), map[reflect.Type]bool{})
	singlePass.Store(k, ok)
	return ok
}

var (
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
	// fieldsV1 is checked by decodeJSONObject: a body with managedFields
	// goes to the general decoder.
	fieldsV1 = reflect.TypeFor[metav1.FieldsV1]()
)

func checkedByStrictPass(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true
	}
	seen[t] = true
	if scalarJSON[t] || t == fieldsV1 {
		return true
	}
	if t.Kind() == reflect.Pointer {
		return checkedByStrictPass(t.Elem(), seen)
	}
	if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return checkedByStrictPass(t.Elem(), seen)
	case reflect.Map:
		return checkedByStrictPass(t.Key(), seen) && checkedByStrictPass(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && !checkedByStrictPass(f.Type, seen) {
				return false
			}
		}
	}
	return true
}

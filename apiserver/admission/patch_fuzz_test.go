package admission

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
)

// FuzzApplyPatch feeds applyPatch what a mutating webhook may answer:
// any patch over any object. It returns an error or an object of the
// request's apiVersion and kind, and never panics.
func FuzzApplyPatch(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","labels":{"x":"y"}}}`), []byte(`[{"op":"add","path":"/metadata/labels/team","value":"shop"}]`))
	f.Add([]byte(`{"metadata":{}}`), []byte(`[{"op":"remove","path":"/metadata"},{"op":"replace","path":"/kind","value":1}]`))
	f.Add([]byte(`{}`), []byte(`[{"op":"move","from":"/a","path":"/a/b"}]`))
	f.Add([]byte(`{"a":[1,2]}`), []byte(`[{"op":"copy","from":"/a","path":"/a/-"},{"op":"test","path":"/a/0","value":1}]`))
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		var sent map[string]any
		if json.Unmarshal(doc, &sent) != nil {
			return
		}
		out, err := applyPatch(sent, patch, gvk, func(data []byte) (api.Object, error) {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(data); err != nil {
				return nil, err
			}
			return u, nil
		})
		if err != nil {
			return
		}
		if got := out.GetObjectKind().GroupVersionKind(); got != gvk {
			t.Fatalf("patched object is a %v, want %v", got, gvk)
		}
	})
}

package patch

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FuzzPatch applies any body as each of the three patch types to a pod:
// never a panic, and a failure is always a 4xx Status, the patch's fault.
func FuzzPatch(f *testing.F) {
	for _, seed := range []string{
		`{"spec":{"containers":[{"name":"a","image":"a:2"}]}}`,
		`{"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}],"containers":[{"name":"b","image":"b"}]}}`,
		`{"spec":{"containers":[{"name":"a","$patch":"delete"}]}}`,
		`{"metadata":{"$deleteFromPrimitiveList/finalizers":["f"],"labels":{"$patch":"replace"}}}`,
		`{"$retainKeys":["spec"]}`, `{"spec":{"nope":{"a":1}}}`,
		`[{"op":"add","path":"/spec/containers/-","value":{"name":"c"}}]`,
		`[{"op":"copy","from":"/spec","path":"/spec/x"},{"op":"copy","from":"/spec","path":"/spec/y"}]`,
		`[{"op":"test","path":"/metadata/name","value":"a"}]`, `null`, `[]`, `{}`, `"x"`, `{`,
	} {
		f.Add([]byte(seed))
	}
	doc := []byte(`{"metadata":{"name":"a","finalizers":["f"],"labels":{"l":"1"}},"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80}]}]}}`)
	meta, err := SchemaOf(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, apply := range map[string]func() ([]byte, error){
			"merge":     func() ([]byte, error) { return Merge(doc, body) },
			"json":      func() ([]byte, error) { return JSON(doc, body) },
			"strategic": func() ([]byte, error) { return Strategic(doc, body, meta) },
		} {
			if _, err := apply(); err != nil {
				var se *apierrors.StatusError
				if !errors.As(err, &se) || se.ErrStatus.Code < 400 || se.ErrStatus.Code >= 500 {
					t.Errorf("%s %q: %v, want a 4xx Status", name, body, err)
				}
			}
		}
	})
}

package patch

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func canonical(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMergePatchRFC7386(t *testing.T) {
	// The examples of RFC 7386 appendix A.
	for _, tc := range []struct{ doc, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{`{"n":12345678901234567}`, `{"m":1}`, `{"m":1,"n":12345678901234567}`},
	} {
		got, err := Merge([]byte(tc.doc), []byte(tc.patch))
		if err != nil {
			t.Fatalf("%s + %s: %v", tc.doc, tc.patch, err)
		}
		if string(got) != canonical(t, tc.want) && !(tc.doc == `{"n":12345678901234567}` && string(got) == `{"m":1,"n":12345678901234567}`) {
			t.Errorf("%s + %s = %s, want %s", tc.doc, tc.patch, got, tc.want)
		}
	}
	// A patch that is not an object replaces the document (RFC 7386 §2),
	// which then fails to decode as an object: not the merge's error.
	for _, bad := range []string{`[`, `{"a":`} {
		if _, err := Merge([]byte(`{}`), []byte(bad)); err == nil {
			t.Errorf("patch %s accepted", bad)
		}
	}
}

func TestStrategicMergePatch(t *testing.T) {
	doc := `{"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80,"name":"http"}]},{"name":"b","image":"b:1"}],
		"tolerations":[{"key":"x"}]},"metadata":{"finalizers":["f1"],"labels":{"l":"1"}}}`
	for _, tc := range []struct{ name, patch, want string }{
		{"merge by name", `{"spec":{"containers":[{"name":"b","image":"b:2"}]}}`,
			`{"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80,"name":"http"}]},{"name":"b","image":"b:2"}],"tolerations":[{"key":"x"}]},"metadata":{"finalizers":["f1"],"labels":{"l":"1"}}}`},
		{"append and reorder", `{"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"a"},{"name":"b"}],"containers":[{"name":"c","image":"c:1"}]}}`,
			`{"spec":{"containers":[{"name":"c","image":"c:1"},{"name":"a","image":"a:1","ports":[{"containerPort":80,"name":"http"}]},{"name":"b","image":"b:1"}],"tolerations":[{"key":"x"}]},"metadata":{"finalizers":["f1"],"labels":{"l":"1"}}}`},
		{"delete item", `{"spec":{"containers":[{"name":"a","$patch":"delete"}]}}`,
			`{"spec":{"containers":[{"name":"b","image":"b:1"}],"tolerations":[{"key":"x"}]},"metadata":{"finalizers":["f1"],"labels":{"l":"1"}}}`},
		{"nested ports by containerPort", `{"spec":{"containers":[{"name":"a","ports":[{"containerPort":80,"protocol":"TCP"}]}]}}`,
			`{"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80,"name":"http","protocol":"TCP"}]},{"name":"b","image":"b:1"}],"tolerations":[{"key":"x"}]},"metadata":{"finalizers":["f1"],"labels":{"l":"1"}}}`},
		{"unkeyed list replaced", `{"spec":{"tolerations":[{"key":"y"}]}}`,
			`{"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80,"name":"http"}]},{"name":"b","image":"b:1"}],"tolerations":[{"key":"y"}]},"metadata":{"finalizers":["f1"],"labels":{"l":"1"}}}`},
		{"finalizers merged, then removed", `{"metadata":{"finalizers":["f2"],"$deleteFromPrimitiveList/finalizers":["f1"]}}`,
			`{"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80,"name":"http"}]},{"name":"b","image":"b:1"}],"tolerations":[{"key":"x"}]},"metadata":{"finalizers":["f2"],"labels":{"l":"1"}}}`},
		{"replace a map", `{"metadata":{"labels":{"$patch":"replace","m":"2"}}}`,
			`{"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80,"name":"http"}]},{"name":"b","image":"b:1"}],"tolerations":[{"key":"x"}]},"metadata":{"finalizers":["f1"],"labels":{"m":"2"}}}`},
		{"retain keys", `{"spec":{"$retainKeys":["containers"]}}`,
			`{"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80,"name":"http"}]},{"name":"b","image":"b:1"}]},"metadata":{"finalizers":["f1"],"labels":{"l":"1"}}}`},
	} {
		got, err := Strategic([]byte(doc), []byte(tc.patch), podSchema(t))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != canonical(t, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, canonical(t, tc.want))
		}
	}
	if _, err := Strategic([]byte(doc), []byte(`{"spec":{"containers":[{"name":"a","$patch":"nope"}]}}`), podSchema(t)); err == nil {
		t.Error("unknown directive accepted")
	}
}

func TestJSONPatchRFC6902(t *testing.T) {
	doc := `{"foo":["bar","baz"],"obj":{"a":1}}`
	for _, tc := range []struct{ patch, want string }{
		{`[{"op":"add","path":"/foo/1","value":"qux"}]`, `{"foo":["bar","qux","baz"],"obj":{"a":1}}`},
		{`[{"op":"add","path":"/foo/-","value":"end"}]`, `{"foo":["bar","baz","end"],"obj":{"a":1}}`},
		{`[{"op":"remove","path":"/foo/0"}]`, `{"foo":["baz"],"obj":{"a":1}}`},
		{`[{"op":"replace","path":"/obj/a","value":2}]`, `{"foo":["bar","baz"],"obj":{"a":2}}`},
		{`[{"op":"move","from":"/obj/a","path":"/b"}]`, `{"b":1,"foo":["bar","baz"],"obj":{}}`},
		{`[{"op":"copy","from":"/foo","path":"/obj/f"}]`, `{"foo":["bar","baz"],"obj":{"a":1,"f":["bar","baz"]}}`},
		{`[{"op":"add","path":"/obj/a~1b","value":true}]`, `{"foo":["bar","baz"],"obj":{"a":1,"a/b":true}}`},
		{`[{"op":"test","path":"/obj/a","value":1}]`, doc},
	} {
		got, err := JSON([]byte(doc), []byte(tc.patch))
		if err != nil {
			t.Fatalf("%s: %v", tc.patch, err)
		}
		if string(got) != canonical(t, tc.want) {
			t.Errorf("%s: got %s, want %s", tc.patch, got, tc.want)
		}
	}
	for _, bad := range []string{
		`[{"op":"remove","path":"/nope"}]`,
		`[{"op":"add","path":"/foo/5","value":1}]`,
		`[{"op":"add","path":"/a/b","value":1}]`,
		`[{"op":"jump","path":"/foo"}]`,
		`[{"op":"test","path":"/obj/a","value":2}]`,
		`{}`,
	} {
		if _, err := JSON([]byte(doc), []byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// podSchema is the patch strategies of Kubernetes' v1 Pod.
func podSchema(t *testing.T) strategicpatch.LookupPatchMeta {
	t.Helper()
	s, err := SchemaOf(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestErrorsAreKubernetes: each kind of bad patch gets the code
// kube-apiserver answers it with.
func TestErrorsAreKubernetes(t *testing.T) {
	doc := []byte(`{"metadata":{"name":"a"},"spec":{"containers":[{"name":"a","image":"a:1"}]}}`)
	for _, tc := range []struct {
		name  string
		apply func() ([]byte, error)
		code  int32
		msg   string
	}{
		{"merge: not JSON", func() ([]byte, error) { return Merge(doc, []byte(`{`)) }, http.StatusBadRequest, "Invalid JSON Patch"},
		{"json: not a list", func() ([]byte, error) { return JSON(doc, []byte(`{}`)) }, http.StatusBadRequest, "cannot unmarshal"},
		{"json: test fails", func() ([]byte, error) {
			return JSON(doc, []byte(`[{"op":"test","path":"/metadata/name","value":"b"}]`))
		}, http.StatusUnprocessableEntity, "test failed"},
		{"json: missing path", func() ([]byte, error) { return JSON(doc, []byte(`[{"op":"remove","path":"/nope"}]`)) }, http.StatusUnprocessableEntity, "missing"},
		{"json: too many operations", func() ([]byte, error) {
			return JSON(doc, []byte("["+strings.Repeat(`{"op":"test","path":"/metadata/name","value":"a"},`, MaxJSONPatchOperations)+`{"op":"test","path":"/metadata/name","value":"a"}]`))
		}, http.StatusRequestEntityTooLarge, "maximum operations"},
		{"strategic: not JSON", func() ([]byte, error) { return Strategic(doc, []byte(`{`), podSchema(t)) }, http.StatusBadRequest, ""},
		{"strategic: not an object", func() ([]byte, error) { return Strategic(doc, []byte(`[1]`), podSchema(t)) }, http.StatusBadRequest, ""},
		{"strategic: not a list of orders", func() ([]byte, error) {
			return Strategic(doc, []byte(`{"spec":{"$setElementOrder/containers":"x"}}`), podSchema(t))
		}, http.StatusUnprocessableEntity, "expected a []interface {}"},
		{"strategic: bad directive", func() ([]byte, error) {
			return Strategic(doc, []byte(`{"spec":{"containers":[{"name":"a","$patch":"nope"}]}}`), podSchema(t))
		}, http.StatusUnprocessableEntity, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.apply()
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != tc.code || !strings.Contains(se.ErrStatus.Message, tc.msg) {
				t.Fatalf("error %v, want a %d Status with %q", err, tc.code, tc.msg)
			}
		})
	}
}

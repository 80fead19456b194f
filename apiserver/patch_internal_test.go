package apiserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
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
		got, err := mergePatch([]byte(tc.doc), []byte(tc.patch))
		if err != nil {
			t.Fatalf("%s + %s: %v", tc.doc, tc.patch, err)
		}
		if string(got) != canonical(t, tc.want) && !(tc.doc == `{"n":12345678901234567}` && string(got) == `{"m":1,"n":12345678901234567}`) {
			t.Errorf("%s + %s = %s, want %s", tc.doc, tc.patch, got, tc.want)
		}
	}
	for _, bad := range []string{`[`, `[1]`, `"x"`, `{} {}`} {
		if _, err := mergePatch([]byte(`{}`), []byte(bad)); err == nil {
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
		got, err := strategicMergePatch([]byte(doc), []byte(tc.patch))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != canonical(t, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, canonical(t, tc.want))
		}
	}
	if _, err := strategicMergePatch([]byte(doc), []byte(`{"$nope":1}`)); err == nil {
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
		got, err := jsonPatch([]byte(doc), []byte(tc.patch))
		if err != nil {
			t.Fatalf("%s: %v", tc.patch, err)
		}
		if string(got) != canonical(t, tc.want) {
			t.Errorf("%s: got %s, want %s", tc.patch, got, tc.want)
		}
	}
	for _, bad := range []string{
		`[{"op":"remove","path":"/nope"}]`,
		`[{"op":"replace","path":"/nope","value":1}]`,
		`[{"op":"add","path":"/foo/5","value":1}]`,
		`[{"op":"add","path":"/foo/01","value":1}]`,
		`[{"op":"add","path":"nope","value":1}]`,
		`[{"op":"jump","path":"/foo"}]`,
		`[{"op":"add","path":"/x"}]`,
		`[{"op":"test","path":"/obj/a","value":2}]`,
		`{}`,
	} {
		if _, err := jsonPatch([]byte(doc), []byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestParseSelectionUsesIndexes(t *testing.T) {
	pods, _ := api.LookupResource("pods")
	events, _ := api.LookupResource("events")
	q := url.Values{"fieldSelector": {"spec.nodeName=n1,status.phase!=Succeeded"}, "labelSelector": {"app=web"}}
	sel, err := parseSelection(pods, "default", q)
	if err != nil {
		t.Fatal(err)
	}
	if sel.filter.Index != store.IndexNode || sel.filter.Value != "n1" || sel.filter.Predicate == nil || sel.filter.Labels == nil {
		t.Fatalf("selection %s", sel)
	}
	sel, err = parseSelection(events, "", url.Values{"fieldSelector": {"involvedObject.uid=u1,involvedObject.kind=Node"}})
	if err != nil || sel.filter.Index != "" || sel.filter.Predicate == nil {
		t.Fatalf("event selection %v %v: want a scan with a predicate", sel, err)
	}
	sel, err = parseSelection(pods, "", url.Values{"fieldSelector": {"metadata.namespace=team"}})
	if err != nil || sel.filter.Namespace != "team" || sel.filter.Predicate != nil {
		t.Fatalf("namespace selection %v %v", sel, err)
	}
	sel, err = parseSelection(pods, "default", url.Values{"fieldSelector": {"metadata.namespace=team"}})
	if err != nil || !sel.none {
		t.Fatalf("contradicting namespace %v %v", sel, err)
	}
	if _, err := parseSelection(pods, "", url.Values{"fieldSelector": {"spec.image=x"}}); err == nil {
		t.Fatal("unknown field accepted")
	}
}

func TestNegotiation(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   responseFormat
		ok     bool
	}{
		{"", formatObject, true},
		{"application/json", formatObject, true},
		{"*/*", formatObject, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", formatTable, true},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", formatTable, true},
		{"application/vnd.kubernetes.protobuf,application/json", formatObject, true},
		{"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json", formatObject, true},
		{"application/vnd.kubernetes.protobuf", formatObject, false},
		{"application/yaml", formatObject, false},
		{"application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json", formatObject, true},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", tc.accept)
		got, err := negotiateFormat(r)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("%q: %v %v", tc.accept, got, err)
		}
	}
}

func TestNegotiateOpenAPIV2(t *testing.T) {
	doc := &openAPIV2Doc{json: []byte("json"), protobuf: []byte("protobuf")}
	for accept, want := range map[string]string{
		"":                 "json",
		"application/json": "json",
		"application/*":    "json",
		"application/com.github.proto-openapi.spec.v2@v1.0+protobuf":                       "protobuf",
		"application/com.github.proto-openapi.spec.v2.v1.0+protobuf":                       "protobuf",
		"application/com.github.proto-openapi.spec.v2@v1.0+protobuf, */*":                  "protobuf",
		"text/html, application/com.github.proto-openapi.spec.v2@v1.0+protobuf":            "protobuf",
		"application/json;q=0, application/com.github.proto-openapi.spec.v2@v1.0+protobuf": "protobuf",
		"application/vnd.kubernetes.protobuf, application/json":                            "json",
		"text/html":            "",
		"application/json;q=0": "",
		"application/com.github.proto-openapi.spec.v3@v1.0+protobuf": "",
	} {
		r, _ := http.NewRequest("GET", "/openapi/v2", nil)
		r.Header.Set("Accept", accept)
		body, _, err := negotiateOpenAPIV2(r, doc)
		if string(body) != want || (err == nil) != (want != "") {
			t.Errorf("%q: %q, %v", accept, body, err)
		}
	}
}

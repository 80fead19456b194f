package apiserver

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

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

package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// openAPIRoot reads the v3 root: where each group version's document is.
func openAPIRoot(t *testing.T, e *env) map[string]string {
	t.Helper()
	code, _, data := e.do("GET", "/openapi/v3", adminToken, "", "", nil)
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(data, &root); err != nil || code != http.StatusOK {
		t.Fatalf("root: %d %v %s", code, err, data)
	}
	out := map[string]string{}
	for gv, p := range root.Paths {
		out[gv] = p.ServerRelativeURL
	}
	return out
}

// openAPISchemaOf reads a group version's v3 document and returns the
// schema of a kind, found by its x-kubernetes-group-version-kind as
// kubectl explain finds it, checking that every reference resolves.
func openAPISchemaOf(t *testing.T, e *env, url, group, version, kind string) map[string]any {
	t.Helper()
	code, _, data := e.do("GET", url, adminToken, "", "", nil)
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || code != http.StatusOK {
		t.Fatalf("%s: %d %v %s", url, code, err, data)
	}
	for _, ref := range regexp.MustCompile(`"\$ref":"#/components/schemas/([^"]+)"`).FindAllSubmatch(data, -1) {
		if _, ok := doc.Components.Schemas[string(ref[1])]; !ok {
			t.Errorf("%s: reference to %s, which it does not hold", url, ref[1])
		}
	}
	var found map[string]any
	for _, s := range doc.Components.Schemas {
		gvks, _ := s["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m := g.(map[string]any)
			if m["group"] == group && m["version"] == version && m["kind"] == kind {
				found = s
			}
		}
	}
	if found == nil {
		t.Fatalf("%s: no schema of %s/%s %s", url, group, version, kind)
	}
	return found
}

// TestOpenAPICustomKinds: a CRD's versions are published in /openapi/v3
// and /openapi/v2 as kube-apiserver publishes them, the v3 document's
// hash changes when the CRD does, and a CRD's deletion takes them away.
func TestOpenAPICustomKinds(t *testing.T) {
	e := newEnv(t)
	const group = "openapi-test.example.com"
	before := openAPIRoot(t, e)
	crd := widgetCRD(t, group)
	withCRD(t, e.store, crd)

	root := openAPIRoot(t, e)
	if len(root) != len(before)+2 || root["apis/"+group+"/v1"] == "" || root["apis/"+group+"/v1beta1"] == "" {
		t.Fatalf("root after the CRD: %v", root)
	}
	for gv, url := range before {
		if root[gv] != url {
			t.Errorf("built-in %s moved: %s, was %s", gv, root[gv], url)
		}
	}
	widget := openAPISchemaOf(t, e, root["apis/"+group+"/v1"], group, "v1", "Widget")
	data, _ := json.Marshal(widget)
	if !contains(string(data), `"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"`,
		`"enum":["small","large"]`, `"required":["size"]`, `"default":1`, `"x-kubernetes-validations"`) {
		t.Errorf("Widget v1 schema: %s", data)
	}
	code, _, doc := e.do("GET", root["apis/"+group+"/v1"], adminToken, "", "", nil)
	if code != http.StatusOK || !contains(string(doc),
		`"/apis/`+group+`/v1/namespaces/{namespace}/widgets/{name}/scale"`, `"fieldValidation"`, `"WidgetList"`) {
		t.Errorf("Widget v1 document: %d %.2000s", code, doc)
	}
	openAPISchemaOf(t, e, root["apis/"+group+"/v1beta1"], group, "v1beta1", "Widget")

	// The v2 document holds the kind too, with the value validations
	// v2 cannot say stripped, as kube-apiserver strips them.
	code, _, data = e.do("GET", "/openapi/v2", adminToken, "", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", nil)
	if code != http.StatusOK {
		t.Fatalf("v2: %d %s", code, data)
	}
	v2 := &openapi_v2.Document{}
	if err := proto.Unmarshal(data, v2); err != nil {
		t.Fatal(err)
	}
	models, err := openapiproto.NewOpenAPIData(v2)
	if err != nil {
		t.Fatalf("v2 models: %v", err)
	}
	var v2Widget openapiproto.Schema
	for _, name := range models.ListModels() {
		s := models.LookupModel(name)
		if gvk, _ := s.GetExtensions()["x-kubernetes-group-version-kind"].([]any); len(gvk) > 0 {
			if m, _ := gvk[0].(map[any]any); m["group"] == group && m["version"] == "v1" && m["kind"] == "Widget" {
				v2Widget = s
			}
		}
	}
	if v2Widget == nil {
		t.Fatal("v2: no Widget v1 model")
	}
	if _, ok := v2Widget.(*openapiproto.Kind).Fields["spec"]; !ok {
		t.Errorf("v2 Widget fields: %v", v2Widget.(*openapiproto.Kind).Keys())
	}

	// A changed CRD changes the document and its hash.
	old, err := e.store.Get(api.KindOf(crd), "", crd.Name)
	if err != nil {
		t.Fatal(err)
	}
	changed := old.DeepCopyObject().(*api.CustomResourceDefinition)
	spec := changed.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["shape"] = apiextensionsv1.JSONSchemaProps{Type: "string", Description: "The widget's outline."}
	changed.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if _, err := e.store.Update(context.Background(), changed); err != nil {
		t.Fatal(err)
	}
	after := openAPIRoot(t, e)
	if after["apis/"+group+"/v1"] == root["apis/"+group+"/v1"] {
		t.Fatalf("the v1 document's hash did not change with its CRD: %s", after["apis/"+group+"/v1"])
	}
	widget = openAPISchemaOf(t, e, after["apis/"+group+"/v1"], group, "v1", "Widget")
	if data, _ := json.Marshal(widget); !strings.Contains(string(data), "The widget's outline.") {
		t.Errorf("Widget v1 after the change: %s", data)
	}

	if _, err := e.store.Delete(context.Background(), api.KindOf(crd), "", crd.Name, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if gone := openAPIRoot(t, e); len(gone) != len(before) {
		t.Errorf("root after the CRD's deletion: %v", gone)
	}
}

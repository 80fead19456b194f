package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// widgetCRD is the CRD of the API's good manifests (Widget: printer
// columns, a status and scale subresource, a CEL rule, two versions),
// moved to group so that tests of several stores in one process do not
// share a kind.
func widgetCRD(t testing.TB, group string) *api.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile("../api/testdata/manifests/good/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, errs := api.DecodeStream("crd.yaml", data, api.DecodeOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	crd := objs[0].Object.(*api.CustomResourceDefinition)
	crd.Spec.Group = group
	crd.Name = "widgets." + group
	api.Default(crd)
	return crd
}

// withCRD stores a CRD in st.
func withCRD(t testing.TB, st *store.Store, crd *api.CustomResourceDefinition) {
	t.Helper()
	if _, err := st.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
}

// TestCustomResourceAPI holds the routes of a custom kind to Kubernetes'
// behaviour: defaults, pruning, every schema and CEL error in one 422,
// spec and status written apart, selectors, the other version, watch.
func TestCustomResourceAPI(t *testing.T) {
	e := newEnv(t)
	const group = "api-test.example.com"
	withCRD(t, e.store, widgetCRD(t, group))
	base := "/apis/" + group + "/v1/namespaces/default/widgets"
	post := func(body string) (int, []byte) {
		code, _, data := e.do("POST", base, adminToken, "application/json", "", strings.NewReader(body))
		return code, data
	}
	code, data := post(`{"apiVersion":"` + group + `/v1","kind":"Widget","metadata":{"name":"w1","labels":{"tier":"a"}},"spec":{"size":"small"},"status":{"replicas":9}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, data)
	}
	var w map[string]any
	_ = json.Unmarshal(data, &w)
	spec := w["spec"].(map[string]any)
	if spec["replicas"] != float64(1) || w["status"] != nil {
		t.Fatalf("create: want replicas defaulted and status dropped: %s", data)
	}
	// Every problem at once, each naming its field.
	code, data = post(`{"apiVersion":"` + group + `/v1","kind":"Widget","metadata":{"name":"bad"},"spec":{"size":"huge","replicas":-1,"color":"R"}}`)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("invalid create: %d %s", code, data)
	}
	for _, want := range []string{"spec.size", "spec.replicas", "spec.color"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("422 does not name %s: %s", want, data)
		}
	}
	code, data = post(`{"apiVersion":"` + group + `/v1","kind":"Widget","metadata":{"name":"many"},"spec":{"size":"small","replicas":20}}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(data), "at most 10 replicas") {
		t.Fatalf("CEL rule: %d %s", code, data)
	}
	// Unknown fields: refused under Strict, pruned under Ignore.
	code, data = post(`{"apiVersion":"` + group + `/v1","kind":"Widget","metadata":{"name":"extra"},"spec":{"size":"small","shade":"blue"}}`)
	if code != http.StatusBadRequest || !strings.Contains(string(data), "spec.shade") {
		t.Fatalf("unknown field, strict: %d %s", code, data)
	}
	code, _, data = e.do("POST", base+"?fieldValidation=Ignore", adminToken, "application/json", "", strings.NewReader(`{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"extra"},"spec":{"size":"small","shade":"blue"}}`))
	if code != http.StatusCreated || strings.Contains(string(data), "shade") {
		t.Fatalf("unknown field, ignored: %d %s", code, data)
	}
	// A status write changes the status alone.
	code, _, data = e.do("PATCH", base+"/w1/status", adminToken, "application/merge-patch+json", "", strings.NewReader(`{"spec":{"size":"large"},"status":{"replicas":4}}`))
	if code != http.StatusOK || !strings.Contains(string(data), `"replicas":4`) || !strings.Contains(string(data), `"size":"small"`) {
		t.Fatalf("status patch: %d %s", code, data)
	}
	// The other version: the same object, its apiVersion the one asked for.
	code, _, data = e.do("GET", "/apis/"+group+"/v1beta1/namespaces/default/widgets/w1", adminToken, "", "", nil)
	if code != http.StatusOK || !strings.Contains(string(data), `"apiVersion":"`+group+`/v1beta1"`) {
		t.Fatalf("v1beta1: %d %s", code, data)
	}
	// Selectors.
	code, _, data = e.do("GET", base+"?labelSelector=tier%3Da", adminToken, "", "", nil)
	if code != http.StatusOK || !strings.Contains(string(data), `"name":"w1"`) || strings.Contains(string(data), `"name":"extra"`) {
		t.Fatalf("label selector: %d %s", code, data)
	}
	code, _, data = e.do("GET", "/apis/"+group+"/v1/widgets?fieldSelector=metadata.name%3Dextra", adminToken, "", "", nil)
	if code != http.StatusOK || !strings.Contains(string(data), `"kind":"WidgetList"`) || strings.Contains(string(data), `"name":"w1"`) {
		t.Fatalf("field selector: %d %s", code, data)
	}
	// Discovery lists the kind in both versions, with its subresources.
	code, _, data = e.do("GET", "/apis/"+group+"/v1", adminToken, "", "", nil)
	var list metav1.APIResourceList
	_ = json.Unmarshal(data, &list)
	var names []string
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	if code != http.StatusOK || strings.Join(names, " ") != "widgets widgets/status widgets/scale" {
		t.Fatalf("discovery: %d %v", code, names)
	}
	// A watch sees a change.
	req, _ := http.NewRequest("GET", e.ts.URL+base+"?watch=true&resourceVersion="+w["metadata"].(map[string]any)["resourceVersion"].(string), nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if code, data := post(`{"apiVersion":"` + group + `/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"size":"large"}}`); code != http.StatusCreated {
		t.Fatalf("create w2: %d %s", code, data)
	}
	sc := bufio.NewScanner(resp.Body)
	found := false
	for !found && sc.Scan() {
		found = strings.Contains(sc.Text(), `"name":"w2"`)
	}
	if !found {
		t.Fatal("the watch did not see w2")
	}
}

// FuzzCustomResource throws bodies at the writes of a custom kind: its
// decoding, pruning, defaulting and schema and CEL validation.
func FuzzCustomResource(f *testing.F) {
	const group = "fuzz.example.com"
	srv, st := fuzzServer(f)
	withCRD(f, st, widgetCRD(f, group))
	w := `{"apiVersion":"` + group + `/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"size":"small","replicas":1}}`
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON([]byte(w)); err != nil {
		f.Fatal(err)
	}
	if _, err := st.Create(context.Background(), &u); err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		w,
		`{"apiVersion":"` + group + `/v1beta1","kind":"Widget","metadata":{"name":"x"},"anything":[1,2]}`,
		`{"spec":{"size":"large","replicas":1e400}}`,
		`{"spec":{"replicas":"3"},"status":{"replicas":-1}}`,
		`{"metadata":{"name":7}}`, `{"metadata":[]}`, `null`, `[]`, "spec:\n  size: small\n",
		`[{"op":"replace","path":"/spec/replicas","value":100}]`,
	} {
		for i := range customFuzzRequests {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		r := customFuzzRequests[int(which)%len(customFuzzRequests)]
		serveFuzz(t, srv, st, r.method, strings.ReplaceAll(r.path, "GROUP", group), r.ct, body)
	})
}

var customFuzzRequests = []struct{ method, path, ct string }{
	{http.MethodPost, "/apis/GROUP/v1/namespaces/default/widgets", "application/json"},
	{http.MethodPost, "/apis/GROUP/v1beta1/namespaces/default/widgets", "application/yaml"},
	{http.MethodPut, "/apis/GROUP/v1/namespaces/default/widgets/w", "application/json"},
	{http.MethodPatch, "/apis/GROUP/v1/namespaces/default/widgets/w", "application/merge-patch+json"},
	{http.MethodPatch, "/apis/GROUP/v1/namespaces/default/widgets/w/status", "application/merge-patch+json"},
	{http.MethodPatch, "/apis/GROUP/v1/namespaces/default/widgets/w", "application/json-patch+json"},
	{http.MethodPatch, "/apis/GROUP/v1/namespaces/default/widgets/w", "application/apply-patch+yaml"},
	{http.MethodPatch, "/apis/GROUP/v1/namespaces/default/widgets/w/scale", "application/merge-patch+json"},
}

// TestCustomResourceVersions holds a CRD of two versions (conversion
// None) to Kubernetes' behaviour: an object created in one version is
// stored in the storage version, and read, listed and watched in any
// served version with only its apiVersion changed; a CRD asking for
// webhook conversion is refused, naming the field.
func TestCustomResourceVersions(t *testing.T) {
	e := newEnv(t)
	const group = "versions-test.example.com"
	withCRD(t, e.store, widgetCRD(t, group))
	ns := "/namespaces/default/widgets"
	at := func(v string) string { return "/apis/" + group + "/" + v + ns }
	code, _, data := e.do("POST", at("v1beta1"), adminToken, "application/json", "",
		strings.NewReader(`{"apiVersion":"`+group+`/v1beta1","kind":"Widget","metadata":{"name":"old"},"spec":{"size":"small"}}`))
	if code != http.StatusCreated || !strings.Contains(string(data), `"apiVersion":"`+group+`/v1beta1"`) {
		t.Fatalf("create at v1beta1: %d %s", code, data)
	}

	k, ok := api.CustomKind(schema.GroupResource{Group: group, Resource: "widgets"})
	if !ok {
		t.Fatal("the kind is not registered")
	}
	stored, err := e.store.Get(k, "default", "old")
	if err != nil {
		t.Fatal(err)
	}
	if got := stored.GetObjectKind().GroupVersionKind().Version; got != "v1" {
		t.Fatalf("stored in %s, want the storage version v1", got)
	}

	for _, v := range []string{"v1", "v1beta1"} {
		code, _, data := e.do("GET", at(v)+"/old", adminToken, "", "", nil)
		var obj map[string]any
		_ = json.Unmarshal(data, &obj)
		if code != http.StatusOK || obj["apiVersion"] != group+"/"+v || obj["kind"] != "Widget" {
			t.Fatalf("get at %s: %d %s", v, code, data)
		}
		code, _, data = e.do("GET", at(v), adminToken, "", "", nil)
		var list struct {
			APIVersion string           `json:"apiVersion"`
			Kind       string           `json:"kind"`
			Items      []map[string]any `json:"items"`
		}
		_ = json.Unmarshal(data, &list)
		if code != http.StatusOK || list.APIVersion != group+"/"+v || list.Kind != "WidgetList" || len(list.Items) != 1 ||
			list.Items[0]["apiVersion"] != group+"/"+v {
			t.Fatalf("list at %s: %d %s", v, code, data)
		}
	}

	// A watch at v1beta1 sees an object written at v1 in v1beta1.
	req, _ := http.NewRequest("GET", e.ts.URL+at("v1beta1")+"?watch=true&resourceVersion="+stored.GetResourceVersion(), nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if code, _, data := e.do("POST", at("v1"), adminToken, "application/json", "",
		strings.NewReader(`{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"new"},"spec":{"size":"large"}}`)); code != http.StatusCreated {
		t.Fatalf("create at v1: %d %s", code, data)
	}
	sc := bufio.NewScanner(resp.Body)
	var event string
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"name":"new"`) {
			event = sc.Text()
			break
		}
	}
	if !strings.Contains(event, `"apiVersion":"`+group+`/v1beta1"`) {
		t.Fatalf("watch at v1beta1: %q", event)
	}

	// Webhook conversion is refused.
	hooked := widgetCRD(t, "webhook-test.example.com")
	hooked.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptrTo("https://convert.example.com/convert")},
			ConversionReviewVersions: []string{"v1"},
		},
	}
	body, _ := json.Marshal(hooked)
	code, _, data = e.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", adminToken, "application/json", "", strings.NewReader(string(body)))
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(data), `spec.conversion.strategy: Unsupported value: \"Webhook\": supported values: \"None\"`) {
		t.Fatalf("a CRD with webhook conversion: %d %s", code, data)
	}
}

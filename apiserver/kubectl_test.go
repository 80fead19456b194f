package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/util/proto/validation"

	"github.com/berth-dev/berth/api"
)

// These tests hold the server to what kubectl sends, beyond plain JSON.

// protobufBody encodes an object as Kubernetes protobuf, as kubectl's
// generators (create namespace, create configmap, run) send it.
func protobufBody(t testing.TB, obj interface {
	runtime.Object
	Marshal() ([]byte, error)
}, apiVersion, kind string) []byte {
	t.Helper()
	raw, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw, ContentType: "application/vnd.kubernetes.protobuf"}
	data, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), data...)
}

func TestProtobufBodies(t *testing.T) {
	e := newEnv(t)
	const pb = "application/vnd.kubernetes.protobuf"
	body := protobufBody(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-pb"}, Data: map[string]string{"a": "b"}}, "v1", "ConfigMap")
	code, _, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, pb, "application/vnd.kubernetes.protobuf, */*", bytes.NewReader(body))
	if code != http.StatusCreated || !strings.Contains(string(data), `"a":"b"`) {
		t.Fatalf("protobuf create: %d %s", code, data)
	}
	// A Service carries an empty status.loadBalancer berth does not have.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: corev1.ServiceSpec{ClusterIP: "None", Ports: []corev1.ServicePort{{Port: 80}}}}
	code, _, data = e.do("POST", "/api/v1/namespaces/default/services", adminToken, pb, "", bytes.NewReader(protobufBody(t, svc, "v1", "Service")))
	if code != http.StatusCreated {
		t.Fatalf("protobuf service: %d %s", code, data)
	}
	// Every field of a pod comes through, such as hostNetwork.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	code, _, data = e.do("POST", "/api/v1/namespaces/default/pods", adminToken, pb, "", bytes.NewReader(protobufBody(t, pod, "v1", "Pod")))
	if code != http.StatusCreated || !strings.Contains(string(data), `"hostNetwork":true`) {
		t.Fatalf("protobuf pod: %d %s", code, data)
	}
	for name, bad := range map[string][]byte{
		"no magic":  []byte("garbage"),
		"truncated": body[:len(body)/2],
	} {
		code, _, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, pb, "", bytes.NewReader(bad))
		if code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, code, data)
		}
	}
}

// TestProtobufDeleteOptions: kubectl drain, with no eviction API to use,
// deletes each pod with DeleteOptions in protobuf.
func TestProtobufDeleteOptions(t *testing.T) {
	e := newEnv(t)
	const pb = "application/vnd.kubernetes.protobuf"
	code, _, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, "application/json", "", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`))
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, data)
	}
	var created metav1.PartialObjectMetadata
	if err := json.Unmarshal(data, &created); err != nil {
		t.Fatal(err)
	}
	del := func(uid string) (int, []byte) {
		opts := &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrTo(types.UID(uid))}}
		code, _, data := e.do("DELETE", "/api/v1/namespaces/default/configmaps/c", adminToken, pb, "", bytes.NewReader(protobufBody(t, opts, "v1", "DeleteOptions")))
		return code, data
	}
	// The options are read: a precondition that does not hold refuses.
	if code, data := del("not-the-uid"); code != http.StatusConflict {
		t.Fatalf("delete with a wrong uid: %d %s", code, data)
	}
	if code, data := del(string(created.UID)); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, data)
	}
	if code, _, data := e.do("GET", "/api/v1/namespaces/default/configmaps/c", adminToken, "", "", nil); code != http.StatusNotFound {
		t.Fatalf("after the delete: %d %s", code, data)
	}
	code, _, data = e.do("DELETE", "/api/v1/namespaces/default/configmaps/c", adminToken, pb, "", strings.NewReader("k8s\x00\x0a\xff"))
	if code != http.StatusBadRequest {
		t.Fatalf("malformed protobuf options: %d %s", code, data)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestStatusInBodyIgnored: kubectl expose and `kubectl get -o yaml |
// kubectl replace -f -` send a status the write ignores anyway; it must
// not fail the request.
func TestStatusInBodyIgnored(t *testing.T) {
	e := newEnv(t)
	svc := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":80}],"selector":{"app":"web"}},"status":{"loadBalancer":{}}}`
	code, _, data := e.do("POST", "/api/v1/namespaces/default/services", adminToken, "application/json", "", strings.NewReader(svc))
	if code != http.StatusCreated {
		t.Fatalf("create with status: %d %s", code, data)
	}
	var created map[string]any
	_ = json.Unmarshal(data, &created)
	meta := created["metadata"].(map[string]any)
	put := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","resourceVersion":"` + meta["resourceVersion"].(string) +
		`"},"spec":{"ports":[{"port":81}]},"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}}`
	code, _, data = e.do("PUT", "/api/v1/namespaces/default/services/web", adminToken, "application/json", "", strings.NewReader(put))
	if code != http.StatusOK {
		t.Fatalf("replace with status: %d %s", code, data)
	}
}

func TestScaleSubresource(t *testing.T) {
	e := newEnv(t)
	replicas := int32(2)
	e.mustCreate(&api.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: "web:1", Command: []string{"web"}}}},
			},
		},
	})
	path := "/apis/apps/v1/namespaces/default/deployments/web/scale"
	code, _, data := e.do("GET", path, adminToken, "", "", nil)
	if code != http.StatusOK || !contains(string(data), `"kind":"Scale"`, `"apiVersion":"autoscaling/v1"`, `"replicas":2`, `"selector":"app=web"`) {
		t.Fatalf("get scale: %d %s", code, data)
	}
	code, _, data = e.do("PATCH", path, adminToken, "application/merge-patch+json", "", strings.NewReader(`{"spec":{"replicas":5}}`))
	if code != http.StatusOK || !strings.Contains(string(data), `"replicas":5`) {
		t.Fatalf("patch scale: %d %s", code, data)
	}
	obj, err := e.client.Get(context.Background(), deployKind, "default", "web")
	if err != nil || *obj.(*api.Deployment).Spec.Replicas != 5 {
		t.Fatalf("deployment after scale: %v %+v", err, obj)
	}
	code, _, data = e.do("PUT", path, adminToken, "application/json", "", strings.NewReader(`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web","resourceVersion":"1"},"spec":{"replicas":1}}`))
	status(t, code, data, http.StatusConflict)
	code, _, data = e.do("PUT", path, adminToken, "application/json", "", strings.NewReader(`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web"},"spec":{"replicas":-1}}`))
	status(t, code, data, http.StatusUnprocessableEntity)
	code, _, data = e.do("GET", "/api/v1/namespaces/default/pods/x/scale", adminToken, "", "", nil)
	status(t, code, data, http.StatusNotFound)
}

func TestOpenAPIV3(t *testing.T) {
	e := newEnv(t)
	code, _, data := e.do("GET", "/openapi/v3", adminToken, "", "", nil)
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(data, &root); err != nil || code != http.StatusOK {
		t.Fatalf("root: %d %v", code, err)
	}
	apps, ok := root.Paths["apis/apps/v1"]
	if !ok || !strings.HasPrefix(apps.ServerRelativeURL, "/openapi/v3/apis/apps/v1?hash=") {
		t.Fatalf("root paths %+v", root.Paths)
	}
	code, _, data = e.do("GET", apps.ServerRelativeURL, adminToken, "", "", nil)
	if code != http.StatusOK || !contains(string(data), `"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"`, `"fieldValidation"`, `"kind":"Deployment"`) {
		t.Fatalf("apps/v1: %d %s", code, data)
	}

	// Every group version document holds the schemas of its kinds, found
	// by their group, version and kind as kubectl explain finds them,
	// and every reference in it resolves in it.
	for gv, p := range root.Paths {
		code, _, data := e.do("GET", p.ServerRelativeURL, adminToken, "", "", nil)
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Description string                     `json:"description"`
					Properties  map[string]json.RawMessage `json:"properties"`
					GVK         []map[string]string        `json:"x-kubernetes-group-version-kind"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(data, &doc); err != nil || code != http.StatusOK {
			t.Fatalf("%s: %d %v", gv, code, err)
		}
		gvPath := func(group, version string) string {
			if group == "" {
				return "api/" + version
			}
			return "apis/" + group + "/" + version
		}
		kinds := map[string]bool{}
		for name, s := range doc.Components.Schemas {
			for _, gvk := range s.GVK {
				if s.Description == "" || s.Properties["metadata"] == nil {
					t.Errorf("%s: schema %s of %v: description %q, properties %d", gv, name, gvk, s.Description, len(s.Properties))
				}
				// A kind of another group version is there only when a
				// kind of this one holds it, as Kubernetes' apps/v1
				// holds core/v1 PersistentVolumeClaim for a
				// StatefulSet's volumeClaimTemplates.
				if gvPath(gvk["group"], gvk["version"]) == gv {
					kinds[gvk["kind"]] = true
				}
			}
		}
		for _, k := range api.Kinds() {
			if gvPath(k.GVK.Group, k.GVK.Version) == gv && !kinds[k.GVK.Kind] {
				t.Errorf("%s: no schema for %s", gv, k.GVK.Kind)
			}
		}
		for _, ref := range regexp.MustCompile(`"\$ref":"#/components/schemas/([^"]+)"`).FindAllSubmatch(data, -1) {
			if _, ok := doc.Components.Schemas[string(ref[1])]; !ok {
				t.Errorf("%s: reference to %s, which it does not hold", gv, ref[1])
			}
		}
	}
}

// TestOpenAPIV2 reads the v2 document as kubectl does for the items of a
// List: as protobuf, into gnostic's Document, parsed into models found
// by their group, version and kind, against which kube-openapi's
// validation (kubectl's) checks an object.
func TestOpenAPIV2(t *testing.T) {
	e := newEnv(t)
	code, h, data := e.do("GET", "/openapi/v2", adminToken, "", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", nil)
	if code != http.StatusOK || h.Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" || h.Get("Vary") != "Accept" {
		t.Fatalf("protobuf: %d %v", code, h)
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(data, doc); err != nil {
		t.Fatal(err)
	}
	if doc.Swagger != "2.0" {
		t.Fatalf("swagger %q", doc.Swagger)
	}

	// The JSON, asked for or not, is the same document.
	for _, accept := range []string{"", "application/json", "application/vnd.kubernetes.protobuf, */*"} {
		code, h, data := e.do("GET", "/openapi/v2", adminToken, "", accept, nil)
		if code != http.StatusOK || h.Get("Content-Type") != "application/json" {
			t.Fatalf("Accept %q: %d %v", accept, code, h)
		}
		fromJSON, err := openapi_v2.ParseDocument(data)
		if err != nil {
			t.Fatalf("Accept %q: %v", accept, err)
		}
		if !proto.Equal(fromJSON, doc) {
			t.Errorf("Accept %q: the JSON is not the protobuf's document", accept)
		}
	}
	code, _, data = e.do("GET", "/openapi/v2", adminToken, "", "text/html", nil)
	status(t, code, data, http.StatusNotAcceptable)

	// The definition of a kind carries its group, version and kind.
	var configMap *openapi_v2.Schema
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		if d.GetName() == "com.github.berth-dev.berth.api.ConfigMap" {
			configMap = d.GetValue()
		}
	}
	if gvk := openapiproto.VendorExtensionToMap(configMap.GetVendorExtension())["x-kubernetes-group-version-kind"]; fmt.Sprint(gvk) != "[map[group: kind:ConfigMap version:v1]]" {
		t.Fatalf("ConfigMap: x-kubernetes-group-version-kind %v", gvk)
	}

	// kubectl finds every kind's model, by the same extension.
	models, err := openapiproto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	byGVK := map[string]openapiproto.Schema{}
	for _, name := range models.ListModels() {
		m := models.LookupModel(name)
		gvks, _ := m.GetExtensions()["x-kubernetes-group-version-kind"].([]any)
		for _, gvk := range gvks {
			g, _ := gvk.(map[any]any)
			byGVK[fmt.Sprintf("%v/%v/%v", g["group"], g["version"], g["kind"])] = m
		}
	}
	for _, k := range api.Kinds() {
		if byGVK[k.GVK.Group+"/"+k.GVK.Version+"/"+k.GVK.Kind] == nil {
			t.Errorf("no model of %s", k.GVK)
		}
	}

	// Its validation passes a good ConfigMap and names an unknown field.
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "y"}}, "data": map[string]any{"k": "v"}}
	if errs := validation.ValidateModel(cm, byGVK["/v1/ConfigMap"], "ConfigMap"); len(errs) != 0 {
		t.Errorf("a good ConfigMap: %v", errs)
	}
	cm["colour"] = "red"
	if errs := validation.ValidateModel(cm, byGVK["/v1/ConfigMap"], "ConfigMap"); len(errs) != 1 || !strings.Contains(errs[0].Error(), `unknown field "colour"`) {
		t.Errorf("a ConfigMap with an unknown field: %v", errs)
	}

	// Each kind's object path has the PATCH operation of the v3
	// documents, which names its kind and takes fieldValidation.
	var patch *openapi_v2.Operation
	for _, p := range doc.GetPaths().GetPath() {
		if p.GetName() == "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" {
			patch = p.GetValue().GetPatch()
		}
	}
	params := patch.GetParameters()
	if gvk := openapiproto.VendorExtensionToMap(patch.GetVendorExtension())["x-kubernetes-group-version-kind"]; fmt.Sprint(gvk) != "map[group:apps kind:Deployment version:v1]" ||
		len(params) != 1 || params[0].GetParameter().GetNonBodyParameter().GetQueryParameterSubSchema().GetName() != "fieldValidation" {
		t.Fatalf("deployments PATCH: %v", patch)
	}
}

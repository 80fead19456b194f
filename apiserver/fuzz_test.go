package apiserver_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/store"
)

// The fuzz targets throw arbitrary bodies at the write paths through the
// real handler over a real store: the server must never answer 5xx (a
// panic is recovered into a 500, so it fails too), and a 4xx must leave
// the store untouched.

// fuzzServer is a server without a network, for speed.
func fuzzServer(t testing.TB) (*apiserver.Server, *store.Store) {
	t.Helper()
	srv, st := bareServer(t, apiserver.Config{MaxBodyBytes: 64 << 10})
	ctx := context.Background()
	replicas := int32(1)
	for _, obj := range []api.Object{
		&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&api.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: api.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: api.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: "web:1", Command: []string{"web"}}}},
				},
			},
		},
	} {
		api.Default(obj)
		if _, err := st.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	return srv, st
}

// serveFuzz sends one request and checks the two rules.
func serveFuzz(t *testing.T, srv *apiserver.Server, st *store.Store, method, path, ct string, body []byte) {
	serveFuzzAs(t, srv, st, adminToken, method, path, ct, body)
}

// serveFuzzAs is serveFuzz with another identity's token, returning the
// answer for the fuzz test's own checks.
func serveFuzzAs(t *testing.T, srv *apiserver.Server, st *store.Store, token, method, path, ct string, body []byte) *httptest.ResponseRecorder {
	before := st.Revision()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ct)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s (%s) %q: %d %s", method, path, ct, body, rec.Code, rec.Body.Bytes())
	}
	if rec.Code >= 400 && st.Revision() != before {
		t.Fatalf("%s %s %q: %d, yet the store moved from %d to %d", method, path, body, rec.Code, before, st.Revision())
	}
	return rec
}

var fuzzPaths = []string{
	"/api/v1/namespaces/default/pods",
	"/api/v1/namespaces/default/configmaps",
	"/apis/apps/v1/namespaces/default/deployments",
	"/api/v1/nodes",
	"/api/v1/namespaces",
	"/api/v1/namespaces/default/services",
	"/api/v1/namespaces/default/configmaps?fieldValidation=Warn",
	"/api/v1/namespaces/default/pods?fieldValidation=Ignore",
}

var fuzzContentTypes = []string{"application/json", "application/yaml", ""}

func FuzzCreate(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"other"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n",
		`{"metadata":{"generateName":"x-"}}`,
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod"}]}`,
		`[1,2,3]`, `null`, `{"kind":1}`, "---\n---\n", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":99999}]}}`,
	} {
		for i := range fuzzPaths {
			f.Add(uint8(i), uint8(0), []byte(seed))
		}
	}
	srv, st := fuzzServer(f)
	f.Fuzz(func(t *testing.T, path, ct uint8, body []byte) {
		serveFuzz(t, srv, st, http.MethodPost, fuzzPaths[int(path)%len(fuzzPaths)], fuzzContentTypes[int(ct)%len(fuzzContentTypes)], body)
	})
}

var patchTypes = []string{"application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml"}

func FuzzPatch(f *testing.F) {
	for _, seed := range []string{
		`{"spec":{"replicas":3}}`,
		`{"spec":{"selector":{"matchLabels":{"x":"y"}}}}`,
		`{"metadata":{"name":"other"}}`,
		`{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"web"}],"containers":[{"name":"web","image":"web:2"}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"web","$patch":"delete"}]}}}}`,
		`{"$patch":"replace"}`, `{"$retainKeys":["spec"]}`, `{"kind":"Pod"}`, `{"status":{"replicas":"x"}}`,
		`[{"op":"replace","path":"/spec/replicas","value":2}]`,
		`[{"op":"remove","path":"/spec"}]`, `[{"op":"move","from":"/spec","path":"/spec/x"}]`,
		`[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"b","image":"i"}}]`,
		`[{"op":"copy","from":"/metadata","path":"/spec/template/metadata"}]`,
		`{}`, `null`, `"x"`, `[]`,
	} {
		for i := range patchTypes {
			f.Add(uint8(i), false, []byte(seed))
		}
		f.Add(uint8(0), true, []byte(seed))
	}
	// Unknown and duplicate fields with fieldValidation Warn and Ignore.
	f.Add(uint8(len(patchTypes)), false, []byte(`{"spec":{"bogus":1,"replicas":2,"replicas":3}}`))
	f.Add(uint8(2*len(patchTypes)), false, []byte(`{"spec":{"bogus":1}}`))
	// Server-side apply configurations.
	f.Add(uint8(3), false, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n"))
	f.Add(uint8(3), false, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","managedFields":[{"manager":"x"}]}}`))
	f.Add(uint8(3), false, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n"))
	srv, st := fuzzServer(f)
	f.Fuzz(func(t *testing.T, pt uint8, status bool, body []byte) {
		path := "/apis/apps/v1/namespaces/default/deployments/web"
		if status {
			path += "/status"
		}
		// The higher bits of pt choose the fieldValidation; an apply
		// names its manager.
		path += []string{"?fieldManager=fuzz", "?fieldManager=fuzz&fieldValidation=Warn", "?fieldManager=fuzz&force=true&fieldValidation=Ignore"}[int(pt)/len(patchTypes)%3]
		serveFuzz(t, srv, st, http.MethodPatch, path, patchTypes[int(pt)%len(patchTypes)], body)
	})
}

// FuzzReview throws bodies at the three self reviews of kubectl auth and at
// a LocalSubjectAccessReview, as JSON and as protobuf: never a 5xx, and
// never a write.
func FuzzReview(f *testing.F) {
	for _, seed := range []string{
		`{"spec":{"resourceAttributes":{"verb":"get","resource":"pods","namespace":"default"}}}`,
		`{"spec":{"resourceAttributes":{"verb":"*","group":"*","resource":"*"}}}`,
		`{"spec":{"nonResourceAttributes":{"path":"/version","verb":"get"}}}`,
		`{"spec":{"namespace":"default"}}`,
		`{"spec":{}}`, `{}`, `null`, `[1]`, "k8s\x00\x0a\x00", "k8s\x00\x12\x05\x0a\x03abc",
	} {
		for path := range 3 {
			f.Add(uint8(path), false, []byte(seed))
			f.Add(uint8(path), true, []byte(seed))
		}
	}
	srv, st := fuzzServer(f)
	f.Fuzz(func(t *testing.T, path uint8, protobuf bool, body []byte) {
		p := []string{
			"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			"/apis/authentication.k8s.io/v1/selfsubjectreviews",
			"/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
			"/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
		}[path%4]
		ct := "application/json"
		if protobuf {
			ct = "application/vnd.kubernetes.protobuf"
		}
		before := st.Revision()
		serveFuzz(t, srv, st, http.MethodPost, p, ct, body)
		if st.Revision() != before {
			t.Fatalf("a review wrote to the store: %q", body)
		}
	})
}

// FuzzProtobufBodies throws protobuf bodies, as kubectl's typed client
// sends them, at the writes that read them: a create, a delete's options.
// Never a 5xx; a refused one writes nothing.
func FuzzProtobufBodies(f *testing.F) {
	seeds := [][]byte{
		[]byte("k8s\x00"), []byte("k8s\x00\x0a\x00"), []byte("garbage"), nil,
		protobufBody(f, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pb"}, Data: map[string]string{"a": "b"}}, "v1", "ConfigMap"),
		protobufBody(f, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, "v1", "Pod"),
		protobufBody(f, &metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationForeground)}, "apps/v1", "DeleteOptions"),
		protobufBody(f, &metav1.DeleteOptions{DryRun: []string{"All"}}, "apps/v1", "DeleteOptions"),
		protobufBody(f, &metav1.DeleteOptions{DryRun: []string{"Some"}}, "apps/v1", "DeleteOptions"),
	}
	for _, seed := range seeds {
		f.Add(false, seed)
		f.Add(true, seed)
	}
	srv, st := fuzzServer(f)
	f.Fuzz(func(t *testing.T, del bool, body []byte) {
		if del {
			serveFuzz(t, srv, st, http.MethodDelete, "/apis/apps/v1/namespaces/default/deployments/web", "application/vnd.kubernetes.protobuf", body)
			return
		}
		serveFuzz(t, srv, st, http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/vnd.kubernetes.protobuf", body)
	})
}

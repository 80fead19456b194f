package apiserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// webhookServer is a real HTTPS admission webhook: answer decides each
// AdmissionReview it is sent; calls counts them.
type webhookServer struct {
	*httptest.Server
	caPEM []byte
	calls atomic.Int32
}

func newWebhookServer(t *testing.T, answer func(req *admissionv1.AdmissionRequest, r *http.Request) *admissionv1.AdmissionResponse) *webhookServer {
	t.Helper()
	ws := &webhookServer{}
	ws.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws.calls.Add(1)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		resp := answer(review.Request, r)
		if resp == nil {
			return
		}
		resp.UID = review.Request.UID
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(ws.Close)
	ws.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ws.Certificate().Raw})
	return ws
}

// hook is a webhook of the URL of ws, on configmaps.
func (ws *webhookServer) hook(name string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.ValidatingWebhook {
	u := ws.URL + "/check"
	h := configMapHook(name, ops...)
	h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ws.caPEM}
	return h
}

// configMapHook is a webhook on configmaps, with no client config.
func configMapHook(name string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.ValidatingWebhook {
	none := admissionregistrationv1.SideEffectClassNone
	if len(ops) == 0 {
		ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	}
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		AdmissionReviewVersions: []string{"v1"},
		SideEffects:             &none,
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
	}
}

func mutating(v admissionregistrationv1.ValidatingWebhook) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{Name: v.Name, AdmissionReviewVersions: v.AdmissionReviewVersions, SideEffects: v.SideEffects,
		ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy, TimeoutSeconds: v.TimeoutSeconds,
		NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector}
}

func configMapBody(name string, labels map[string]string) string {
	data, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "labels": labels}, "data": map[string]string{"k": "v"}})
	return string(data)
}

// TestValidatingWebhook: a webhook refuses an object in its own words, as
// Kubernetes words it, and its warnings reach the client; it is asked
// about creates, updates and deletes its rules name, and not about
// objects its selectors leave out.
func TestValidatingWebhook(t *testing.T) {
	e := newEnv(t)
	ws := newWebhookServer(t, func(req *admissionv1.AdmissionRequest, _ *http.Request) *admissionv1.AdmissionResponse {
		var cm api.ConfigMap
		raw := req.Object.Raw
		if req.Operation == admissionv1.Delete {
			raw = req.OldObject.Raw
		}
		if err := json.Unmarshal(raw, &cm); err != nil {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: err.Error()}}
		}
		if req.Kind.Kind != "ConfigMap" || req.Resource.Resource != "configmaps" || req.UserInfo.Username == "" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "unexpected request " + req.Kind.String()}}
		}
		if cm.Labels["deny"] == "yes" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: "configmap " + cm.Name + " carries deny=yes (" + string(req.Operation) + ")"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"checked by the policy webhook"}}
	})
	h := ws.hook("deny.policy.example.com", admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete)
	h.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "exempt", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	e.mustCreate(&api.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "policy"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{h}})
	e.mustCreate(&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "free", Labels: map[string]string{"exempt": "true"}}})

	post := func(ns, body string) (int, http.Header, []byte) {
		return e.do("POST", "/api/v1/namespaces/"+ns+"/configmaps", adminToken, "application/json", "", strings.NewReader(body))
	}
	code, hdr, data := post("default", configMapBody("bad", map[string]string{"deny": "yes"}))
	st := status(t, code, data, http.StatusForbidden)
	if want := `admission webhook "deny.policy.example.com" denied the request: configmap bad carries deny=yes (CREATE)`; st.Message != want {
		t.Fatalf("message %q, want %q", st.Message, want)
	}
	code, hdr, data = post("default", configMapBody("good", map[string]string{"deny": "no"}))
	if code != http.StatusCreated {
		t.Fatalf("allowed create: %d %s", code, data)
	}
	if w := hdr.Get("Warning"); !strings.Contains(w, "checked by the policy webhook") {
		t.Fatalf("warning header %q", w)
	}
	// An update to deny=yes is refused too.
	code, _, data = e.do("PATCH", "/api/v1/namespaces/default/configmaps/good", adminToken, "application/merge-patch+json", "",
		strings.NewReader(`{"metadata":{"labels":{"deny":"yes"}}}`))
	if st := status(t, code, data, http.StatusForbidden); !strings.Contains(st.Message, "(UPDATE)") {
		t.Fatalf("update: %s", st.Message)
	}
	// The exempt namespace is not asked about.
	before := ws.calls.Load()
	if code, _, data := post("free", configMapBody("bad", map[string]string{"deny": "yes"})); code != http.StatusCreated {
		t.Fatalf("exempt namespace: %d %s", code, data)
	}
	if ws.calls.Load() != before {
		t.Fatal("the webhook was called for a namespace its namespaceSelector leaves out")
	}
	// A delete sends the old object.
	if _, err := e.store.Update(context.Background(), func() api.Object {
		cm, _ := e.store.Get(kind("configmaps"), "default", "good")
		c := cm.DeepCopyObject().(*api.ConfigMap)
		c.Labels["deny"] = "yes"
		return c
	}()); err != nil {
		t.Fatal(err)
	}
	code, _, data = e.do("DELETE", "/api/v1/namespaces/default/configmaps/good", adminToken, "", "", nil)
	if st := status(t, code, data, http.StatusForbidden); !strings.Contains(st.Message, "(DELETE)") {
		t.Fatalf("delete: %s", st.Message)
	}
	// The client's error carries the message.
	_, err := e.client.Create(context.Background(), &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", Labels: map[string]string{"deny": "yes"}}})
	if err == nil || !strings.Contains(err.Error(), `admission webhook "deny.policy.example.com" denied the request`) {
		t.Fatalf("client error: %v", err)
	}
}

// TestMutatingWebhook: a webhook's JSONPatch is applied before the object
// is validated and stored; a webhook with reinvocationPolicy IfNeeded is
// called again after a later one changed the object.
func TestMutatingWebhook(t *testing.T) {
	e := newEnv(t)
	patchResp := func(patch string) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &pt}
	}
	// a: adds team=shop, and copies the label "owner" into "owner-seen".
	a := newWebhookServer(t, func(req *admissionv1.AdmissionRequest, _ *http.Request) *admissionv1.AdmissionResponse {
		var cm api.ConfigMap
		_ = json.Unmarshal(req.Object.Raw, &cm)
		ops := []string{`{"op":"add","path":"/metadata/labels/team","value":"shop"}`}
		if o := cm.Labels["owner"]; o != "" {
			ops = append(ops, `{"op":"add","path":"/metadata/labels/owner-seen","value":"`+o+`"}`)
		}
		return patchResp("[" + strings.Join(ops, ",") + "]")
	})
	// b: sets owner=ops.
	b := newWebhookServer(t, func(*admissionv1.AdmissionRequest, *http.Request) *admissionv1.AdmissionResponse {
		return patchResp(`[{"op":"add","path":"/metadata/labels/owner","value":"ops"}]`)
	})
	ha := mutating(a.hook("a.label.example.com"))
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	ha.ReinvocationPolicy = &ifNeeded
	e.mustCreate(&api.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "1-a"}, Webhooks: []admissionregistrationv1.MutatingWebhook{ha}})
	e.mustCreate(&api.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "2-b"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{mutating(b.hook("b.label.example.com"))}})

	code, _, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, "application/json", "",
		strings.NewReader(configMapBody("m", map[string]string{"app": "web"})))
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, data)
	}
	got, err := e.store.Get(kind("configmaps"), "default", "m")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app": "web", "team": "shop", "owner": "ops", "owner-seen": "ops"}
	if l := got.GetLabels(); len(l) != len(want) || l["team"] != "shop" || l["owner"] != "ops" || l["owner-seen"] != "ops" {
		t.Fatalf("labels %v, want %v", l, want)
	}
	if a.calls.Load() != 2 || b.calls.Load() != 1 {
		t.Fatalf("calls a=%d b=%d, want 2 and 1", a.calls.Load(), b.calls.Load())
	}
	// A dry run is sent too (sideEffects None), and stores nothing.
	code, _, data = e.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", adminToken, "application/json", "",
		strings.NewReader(configMapBody("dry", map[string]string{"app": "web"})))
	if code != http.StatusCreated || !strings.Contains(string(data), `"team":"shop"`) {
		t.Fatalf("dry run: %d %s", code, data)
	}
}

// TestWebhookTimeout: a webhook that does not answer holds a write no
// longer than its timeout, and then its failurePolicy decides.
func TestWebhookTimeout(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	ws := newWebhookServer(t, func(_ *admissionv1.AdmissionRequest, r *http.Request) *admissionv1.AdmissionResponse {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return nil
	})
	t.Cleanup(func() { close(release) })
	one := int32(1)
	for _, fp := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Ignore, admissionregistrationv1.Fail} {
		h := ws.hook("slow.policy.example.com")
		h.TimeoutSeconds, h.FailurePolicy = &one, &fp
		name := "slow-" + strings.ToLower(string(fp))
		h.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"policy": name}}
		e.mustCreate(&api.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{h}})
		start := time.Now()
		code, _, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, "application/json", "",
			strings.NewReader(configMapBody(name, map[string]string{"policy": name})))
		took := time.Since(start)
		switch fp {
		case admissionregistrationv1.Ignore:
			if code != http.StatusCreated {
				t.Fatalf("Ignore: %d %s", code, data)
			}
		case admissionregistrationv1.Fail:
			st := status(t, code, data, http.StatusInternalServerError)
			if !strings.Contains(st.Message, `failed calling webhook "slow.policy.example.com"`) {
				t.Fatalf("Fail: %s", st.Message)
			}
		}
		// Generous for a loaded machine, far below a hung request.
		if took > 15*time.Second {
			t.Fatalf("%s: the write took %v with a 1s webhook timeout", fp, took)
		}
	}
}

// selfSignedFor makes a certificate for dnsName, its own CA.
func selfSignedFor(t *testing.T, dnsName string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestServiceWebhook: a webhook named by a Service is called at one of
// the Service's endpoints, its certificate checked for the Service's DNS
// name (NAME.NAMESPACE.svc) against the caBundle.
func TestServiceWebhook(t *testing.T) {
	e := newEnv(t)
	cert, caPEM := selfSignedFor(t, "guard.policy.svc")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID,
			Result: &metav1.Status{Message: "refused at " + r.URL.Path}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	e.mustCreate(&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policy"}})
	e.mustCreate(&api.Service{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: "policy"},
		Spec: api.ServiceSpec{ClusterIP: "None", Ports: []api.ServicePort{{Name: "https", Port: 443}}}})
	if _, err := e.store.Create(context.Background(), &api.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: "policy"},
		Subsets: []api.EndpointSubset{{Addresses: []api.EndpointAddress{{IP: host}}, Ports: []api.EndpointPort{{Name: "https", Port: int32(port)}}}}}); err != nil {
		t.Fatal(err)
	}
	path := "/validate"
	h := configMapHook("guard.policy.example.com")
	h.ClientConfig = admissionregistrationv1.WebhookClientConfig{CABundle: caPEM,
		Service: &admissionregistrationv1.ServiceReference{Namespace: "policy", Name: "guard", Path: &path}}
	e.mustCreate(&api.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{h}})
	code, _, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, "application/json", "",
		strings.NewReader(configMapBody("x", nil)))
	st := status(t, code, data, http.StatusBadRequest)
	if want := `admission webhook "guard.policy.example.com" denied the request: refused at /validate`; st.Message != want {
		t.Fatalf("message %q, want %q", st.Message, want)
	}
}

// TestWebhookConfigurationValidation: a configuration is checked as
// Kubernetes checks it, every problem named by its field.
func TestWebhookConfigurationValidation(t *testing.T) {
	e := newEnv(t)
	body := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"bad"},
"webhooks":[{"name":"short","timeoutSeconds":40,"admissionReviewVersions":["v1beta1"],"clientConfig":{"url":"http://x"},
"rules":[{"operations":["MAKE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]}]}`
	code, _, data := e.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", adminToken, "application/json", "", strings.NewReader(body))
	st := status(t, code, data, http.StatusUnprocessableEntity)
	for _, f := range []string{"webhooks[0].name", "webhooks[0].timeoutSeconds", "webhooks[0].admissionReviewVersions",
		"webhooks[0].clientConfig.url", "webhooks[0].rules[0].operations[0]", "webhooks[0].sideEffects"} {
		if !strings.Contains(st.Message, f) {
			t.Errorf("422 does not name %s: %s", f, st.Message)
		}
	}
	// Served with defaults, listed in discovery, printed as kubectl does.
	code, _, data = e.do("GET", "/apis/admissionregistration.k8s.io/v1", adminToken, "", "", nil)
	if code != http.StatusOK || !strings.Contains(string(data), `"mutatingwebhookconfigurations"`) {
		t.Fatalf("discovery: %d %s", code, data)
	}
}

// TestWebhookMatchConditions: a webhook is sent only the requests its
// CEL matchConditions accept.
func TestWebhookMatchConditions(t *testing.T) {
	e := newEnv(t)
	ws := newWebhookServer(t, func(*admissionv1.AdmissionRequest, *http.Request) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "checked and refused"}}
	})
	h := ws.hook("cond.policy.example.com")
	h.MatchConditions = []admissionregistrationv1.MatchCondition{
		{Name: "labelled", Expression: `has(object.metadata.labels) && object.metadata.labels["check"] == "yes"`},
		{Name: "not-admin", Expression: `request.userInfo.username != "nobody"`},
	}
	e.mustCreate(&api.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cond"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{h}})
	post := func(name string, labels map[string]string) (int, []byte) {
		code, _, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, "application/json", "", strings.NewReader(configMapBody(name, labels)))
		return code, data
	}
	if code, data := post("plain", nil); code != http.StatusCreated {
		t.Fatalf("unlabelled: %d %s", code, data)
	}
	code, data := post("checked", map[string]string{"check": "yes"})
	if st := status(t, code, data, http.StatusBadRequest); !strings.Contains(st.Message, "checked and refused") {
		t.Fatalf("labelled: %s", st.Message)
	}
	if ws.calls.Load() != 1 {
		t.Fatalf("%d calls, want 1", ws.calls.Load())
	}
}

package apiserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
)

func TestTokenRequest(t *testing.T) {
	e := newEnv(t, withRealAuth())
	saKind := kind("serviceaccounts")
	e.server.HandleSubresource(saKind, auth.SubresourceToken, apiserver.TokenRequestHandler(e.store, e.signer))
	e.mustCreate(&api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"}})
	pod := e.mustCreate(testPod("default", "web", "n1", nil)).(*api.Pod)
	e.mustCreate(testPod("default", "other", "n2", nil))
	n1, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	request := func(token, body string) (int, []byte) {
		code, _, out := e.do("POST", "/api/v1/namespaces/default/serviceaccounts/default/token", token, "application/json", "", strings.NewReader(body))
		return code, out
	}

	code, body := request(n1, `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web","uid":"`+string(pod.UID)+`"},"expirationSeconds":1200}}`)
	if code != http.StatusCreated {
		t.Fatalf("token for a pod of the node: %d %s", code, body)
	}
	var tr api.TokenRequest
	if err := json.Unmarshal(body, &tr); err != nil || tr.Status.Token == "" || tr.Kind != "TokenRequest" {
		t.Fatalf("answer %s: %v", body, err)
	}
	if left := tr.Status.ExpirationTimestamp.Sub(e.signer.Clock.Now()); left < 19*60e9 || left > 20*60e9+1e9 {
		t.Errorf("expires in %v, want 20m", left)
	}
	// The token is the service account's identity: it reads its namespace.
	id, err := auth.NewAuthenticator(e.store, adminToken, e.signer).Authenticate(t.Context(), tr.Status.Token)
	if err != nil || id.Name != "system:serviceaccount:default:default" {
		t.Fatalf("issued token authenticates as %+v: %v", id, err)
	}
	grantView(t, e.store, "default", "default")
	if _, err := e.clientFor(tr.Status.Token).Get(t.Context(), kind("configmaps"), "default", "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("service account read in its namespace: %v", err)
	}

	// A token for another audience (a projected serviceAccountToken's)
	// says so, and the API server does not take it.
	code, body = request(n1, `{"spec":{"audiences":["vault"],"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web","uid":"`+string(pod.UID)+`"}}}`)
	var vault api.TokenRequest
	if err := json.Unmarshal(body, &vault); err != nil || code != http.StatusCreated || vault.Status.Token == "" {
		t.Fatalf("token for audience vault: %d %s", code, body)
	}
	if len(vault.Spec.Audiences) != 1 || vault.Spec.Audiences[0] != "vault" {
		t.Errorf("audiences of the answer: %q, want [vault]", vault.Spec.Audiences)
	}
	if claims, err := e.signer.Verify(vault.Status.Token, "vault"); err != nil || claims.Kubernetes == nil || claims.Kubernetes.Pod == nil || claims.Kubernetes.Pod.Name != "web" {
		t.Errorf("the vault token's claims: %+v, %v", claims, err)
	}
	if id, err := auth.NewAuthenticator(e.store, adminToken, e.signer).Authenticate(t.Context(), vault.Status.Token); err == nil {
		t.Errorf("a token for vault authenticates to the API server as %+v", id)
	}
	if len(tr.Spec.Audiences) == 0 {
		t.Errorf("a request with no audiences is answered with none, want the API server's")
	}
	code, body = request(adminToken, `{"spec":{"audiences":[""]}}`)
	if st := status(t, code, body, http.StatusUnprocessableEntity); !strings.Contains(st.Message, "spec.audiences[0]") {
		t.Errorf("empty audience: %s", st.Message)
	}

	// kubectl create token sends its TokenRequest as protobuf.
	pbReq := protobufBody(t, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(900))}}, "authentication.k8s.io/v1", "TokenRequest")
	code, _, body = e.do("POST", "/api/v1/namespaces/default/serviceaccounts/default/token", adminToken, "application/vnd.kubernetes.protobuf", "", bytes.NewReader(pbReq))
	tr = api.TokenRequest{}
	if err := json.Unmarshal(body, &tr); err != nil || code != http.StatusCreated || tr.Status.Token == "" {
		t.Fatalf("protobuf token request: %d %s", code, body)
	}
	if left := tr.Status.ExpirationTimestamp.Sub(e.signer.Clock.Now()); left > 15*60e9+1e9 {
		t.Errorf("protobuf token request: expires in %v, want 15m", left)
	}

	// Another node's pod, a stale UID, a short lifetime, another kind.
	code, body = request(n1, `{"spec":{"boundObjectRef":{"kind":"Pod","name":"other","uid":"x"}}}`)
	if st := status(t, code, body, http.StatusForbidden); !strings.Contains(st.Message, "not bound to it") {
		t.Errorf("other node's pod: %s", st.Message)
	}
	code, body = request(adminToken, `{"spec":{"boundObjectRef":{"kind":"Pod","name":"web","uid":"nope"}}}`)
	status(t, code, body, http.StatusConflict)
	code, body = request(adminToken, `{"spec":{"expirationSeconds":60}}`)
	if st := status(t, code, body, http.StatusUnprocessableEntity); !strings.Contains(st.Message, "spec.expirationSeconds") {
		t.Errorf("short ttl: %s", st.Message)
	}
	code, body = request(adminToken, `{"spec":{"boundObjectRef":{"kind":"Secret","name":"x"}}}`)
	status(t, code, body, http.StatusUnprocessableEntity)
	code, body = request(adminToken, `{"spec":`)
	status(t, code, body, http.StatusBadRequest)
	if code, _, _ := e.do("GET", "/api/v1/namespaces/default/serviceaccounts/default/token", adminToken, "", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET token: %d", code)
	}
}

// TestTokenRequestByNode: a node asks only for tokens bound to a pod bound
// to it, named with its uid, and never to a mirror pod (which it wrote
// itself, in a namespace of its choosing), as Kubernetes'
// NodeRestriction has it; an unbound token would outlive every pod of
// the node.
func TestTokenRequestByNode(t *testing.T) {
	e := newEnv(t, withRealAuth())
	e.server.HandleSubresource(kind("serviceaccounts"), auth.SubresourceToken, apiserver.TokenRequestHandler(e.store, e.signer))
	e.mustCreate(&api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"}})
	pod := e.mustCreate(testPod("default", "web", "n1", nil)).(*api.Pod)
	mirror := testPod("default", "static", "n1", nil)
	mirror.Annotations = map[string]string{api.AnnotationMirror: "h"}
	mirror = e.mustCreate(mirror).(*api.Pod)
	n1, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	request := func(body string) (int, []byte) {
		code, _, out := e.do("POST", "/api/v1/namespaces/default/serviceaccounts/default/token", n1, "application/json", "", strings.NewReader(body))
		return code, out
	}
	for _, c := range []struct{ name, body, why string }{
		{"unbound", `{"spec":{}}`, "bound to a pod"},
		{"bound without uid", `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web"}}}`, "uid"},
		{"bound to a mirror pod", `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"static","uid":"` + string(mirror.UID) + `"}}}`, "mirror pod"},
	} {
		code, body := request(c.body)
		if st := status(t, code, body, http.StatusForbidden); !strings.Contains(st.Message, c.why) {
			t.Errorf("%s: %s does not say %q", c.name, st.Message, c.why)
		}
	}
	if code, body := request(`{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web","uid":"` + string(pod.UID) + `"}}}`); code != http.StatusCreated {
		t.Errorf("bound to its pod: %d %s", code, body)
	}
}

package apiserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
)

// FuzzTokenRequest posts arbitrary TokenRequest bodies, as the admin and
// as a node, through the real handler with berth's own authentication and
// policy: the server must never answer 5xx nor write to the store; a
// lifetime of ten minutes or more is never refused as too short; a node
// gets no token for another node's pod; and a token it issues expires
// within the bounds and authenticates as the service account.
func FuzzTokenRequest(f *testing.F) {
	e := newEnv(f, withRealAuth())
	e.server.HandleSubresource(kind("serviceaccounts"), auth.SubresourceToken, apiserver.TokenRequestHandler(e.store, e.signer))
	e.mustCreate(&api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"}})
	pod := e.mustCreate(testPod("default", "web", "n1", nil)).(*api.Pod)
	e.mustCreate(testPod("default", "other", "n2", nil))
	n1, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		f.Fatal(err)
	}
	authn := auth.NewAuthenticator(e.store, adminToken, e.signer)
	tokens := []string{adminToken, n1}

	for _, seed := range []string{
		`{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web","uid":"` + string(pod.UID) + `"},"expirationSeconds":1200}}`,
		`{"spec":{"boundObjectRef":{"kind":"Pod","name":"other"}}}`,
		`{"spec":{"boundObjectRef":{"kind":"Pod","name":"web","uid":"nope"}}}`,
		`{"spec":{"boundObjectRef":{"kind":"Pod","name":"missing"}}}`,
		`{"spec":{"boundObjectRef":{"kind":"Secret","name":"x"}}}`,
		`{"spec":{"boundObjectRef":{"kind":"Pod","name":""}}}`,
		`{"spec":{"expirationSeconds":60}}`,
		`{"spec":{"expirationSeconds":600}}`,
		`{"spec":{"expirationSeconds":-1}}`,
		`{"spec":{"expirationSeconds":9223372036854775807}}`,
		`{"spec":{"expirationSeconds":18446744674}}`,
		`{"spec":{"expirationSeconds":1e3}}`,
		`{"spec":{"audiences":["a","b"]}}`,
		`{"metadata":{"name":"x","namespace":"other"},"status":{"token":"forged"}}`,
		`{"spec":`, `null`, `[]`, `""`, ``, `{}{}`,
	} {
		f.Add(uint8(0), []byte(seed))
		f.Add(uint8(1), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, who uint8, body []byte) {
		before := e.store.Revision()
		req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/serviceaccounts/default/token", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokens[int(who)%len(tokens)])
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.server.Handler().ServeHTTP(rec, req)
		code, out := rec.Code, rec.Body.Bytes()
		if code >= 500 {
			t.Fatalf("%q: %d %s", body, code, out)
		}
		if e.store.Revision() != before {
			t.Fatalf("%q: the store moved from %d to %d", body, before, e.store.Revision())
		}
		// What the handler read of the body: its first JSON value.
		var sent api.TokenRequest
		decodeErr := json.NewDecoder(bytes.NewReader(body)).Decode(&sent)
		if code != http.StatusCreated {
			var st metav1.Status
			if err := json.Unmarshal(out, &st); err != nil || st.Kind != "Status" || int(st.Code) != code || st.Message == "" {
				t.Fatalf("%q: %d is not a Status with a message: %s", body, code, out)
			}
			if e := sent.Spec.ExpirationSeconds; decodeErr == nil && e != nil && *e >= 600 && strings.Contains(st.Message, "expirationSeconds") {
				t.Fatalf("%q: a lifetime of %ds refused: %s", body, *e, st.Message)
			}
			return
		}
		if decodeErr != nil {
			t.Fatalf("%q: created from a body that does not decode: %v", body, decodeErr)
		}
		if e := sent.Spec.ExpirationSeconds; e != nil && *e < 600 {
			t.Fatalf("%q: a lifetime of %ds accepted", body, *e)
		}
		if ref := sent.Spec.BoundObjectRef; int(who)%len(tokens) == 1 && ref != nil && ref.Name != "web" {
			t.Fatalf("%q: node n1 got a token for pod %q", body, ref.Name)
		}
		var got api.TokenRequest
		if err := json.Unmarshal(out, &got); err != nil || got.Status.Token == "" || got.Name != "default" || got.Namespace != "default" {
			t.Fatalf("%q: answer %s: %v", body, out, err)
		}
		if left := got.Status.ExpirationTimestamp.Sub(e.signer.Clock.Now()); left < 10*time.Minute-time.Second || left > auth.DefaultServiceAccountTokenTTL+time.Second {
			t.Fatalf("%q: expires in %v", body, left)
		}
		// A token for audiences of the request's own is for them, and
		// the API server takes it only among them.
		if aud := sent.Spec.Audiences; len(aud) > 0 && !slices.Contains(aud, e.signer.Issuer) && !slices.ContainsFunc(e.signer.APIAudiences, func(a string) bool { return slices.Contains(aud, a) }) {
			if _, err := e.signer.Verify(got.Status.Token, aud[0]); err != nil {
				t.Fatalf("%q: token not for audience %q: %v", body, aud[0], err)
			}
			return
		}
		id, err := authn.Authenticate(t.Context(), got.Status.Token)
		if err != nil || id.Name != "system:serviceaccount:default:default" {
			t.Fatalf("%q: token authenticates as %+v: %v", body, id, err)
		}
	})
}

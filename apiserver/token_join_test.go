package apiserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
)

const joinTestToken = "4f1d0c0b7a1e4e2f9a6b3c5d7e9f1a2b4f1d0c0b7a1e4e2f9a6b3c5d7e9f1a2b"

func joinTestPost(t *testing.T, url, auth, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+apiserver.JoinPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

func TestJoinIssuesNodeCredential(t *testing.T) {
	s := newAuthTestSetup(t)
	srv := httptest.NewServer(apiserver.JoinHandler(joinTestToken, s.signer, nil))
	defer srv.Close()

	resp, body := joinTestPost(t, srv.URL, "Bearer "+joinTestToken, `{"nodeName":"n1"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	var jr api.JoinResponse
	if err := json.Unmarshal(body, &jr); err != nil || jr.Token == "" {
		t.Fatalf("join response %s: %v", body, err)
	}
	authTestWantIdentity(t, s.authn, jr.Token, apiserver.Identity{Name: "system:node:n1", Kind: apiserver.IdentityNode, Node: "n1"})

	// The join token itself is no credential for the API.
	authTestWantUnauthenticated(t, apiserver.NewAuthenticator(s.st, authTestAdminToken, s.signer), joinTestToken, "join token")
}

func TestJoinRejects(t *testing.T) {
	s := newAuthTestSetup(t)
	srv := httptest.NewServer(apiserver.JoinHandler(joinTestToken, s.signer, nil))
	defer srv.Close()
	cases := []struct {
		name, auth, body string
		code             int
		reason           metav1.StatusReason
	}{
		{"wrong token", "Bearer " + joinTestToken[:len(joinTestToken)-1] + "0", `{"nodeName":"n1"}`, 401, metav1.StatusReasonUnauthorized},
		{"token prefix", "Bearer " + joinTestToken[:10], `{"nodeName":"n1"}`, 401, metav1.StatusReasonUnauthorized},
		{"admin token", "Bearer " + authTestAdminToken, `{"nodeName":"n1"}`, 401, metav1.StatusReasonUnauthorized},
		{"no token", "", `{"nodeName":"n1"}`, 401, metav1.StatusReasonUnauthorized},
		{"basic auth", "Basic " + joinTestToken, `{"nodeName":"n1"}`, 401, metav1.StatusReasonUnauthorized},
		{"bad json", "Bearer " + joinTestToken, `{"nodeName":`, 400, metav1.StatusReasonBadRequest},
		{"unknown field", "Bearer " + joinTestToken, `{"nodeName":"n1","admin":true}`, 400, metav1.StatusReasonBadRequest},
		{"no name", "Bearer " + joinTestToken, `{}`, 422, metav1.StatusReasonInvalid},
		{"bad name", "Bearer " + joinTestToken, `{"nodeName":"N1:evil"}`, 422, metav1.StatusReasonInvalid},
		{"huge body", "Bearer " + joinTestToken, `{"nodeName":"` + strings.Repeat("a", 1<<20) + `"}`, 400, metav1.StatusReasonBadRequest},
	}
	for _, c := range cases {
		resp, body := joinTestPost(t, srv.URL, c.auth, c.body)
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil {
			t.Errorf("%s: body %q: %v", c.name, body, err)
			continue
		}
		if resp.StatusCode != c.code || st.Kind != "Status" || st.Code != int32(c.code) || st.Reason != c.reason {
			t.Errorf("%s: %d %+v, want %d %s", c.name, resp.StatusCode, st, c.code, c.reason)
		}
		if strings.Contains(string(body), joinTestToken) {
			t.Errorf("%s: answer echoes the join token", c.name)
		}
	}

	get, err := http.Get(srv.URL + apiserver.JoinPath)
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if get.StatusCode != http.StatusMethodNotAllowed || get.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d allow %q", get.StatusCode, get.Header.Get("Allow"))
	}
}

func TestJoinWithEmptyJoinTokenRefusesAll(t *testing.T) {
	s := newAuthTestSetup(t)
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, apiserver.JoinPath, strings.NewReader(`{"nodeName":"n1"}`))
	req.Header.Set("Authorization", "Bearer ")
	apiserver.JoinHandler("", s.signer, nil).ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("empty join token: %d", rec.Code)
	}
}

package apiserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
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

// joinTestHandler serves joins over the setup's store and authenticator.
func joinTestHandler(s *authTestSetup, joinToken string) http.Handler {
	return apiserver.JoinHandler(apiserver.JoinConfig{JoinToken: joinToken, Signer: s.signer, Store: s.st, Authenticator: s.authn})
}

func TestJoinIssuesNodeCredential(t *testing.T) {
	s := newAuthTestSetup(t)
	srv := httptest.NewServer(joinTestHandler(s, joinTestToken))
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
	authTestWantIdentity(t, s.authn, jr.Token, auth.Identity{Name: "system:node:n1", Kind: auth.IdentityNode, Node: "n1"})

	// The join token itself is no credential for the API.
	authTestWantUnauthenticated(t, auth.NewAuthenticator(s.st, authTestAdminToken, s.signer), joinTestToken, "join token")
}

func TestJoinRejects(t *testing.T) {
	s := newAuthTestSetup(t)
	srv := httptest.NewServer(joinTestHandler(s, joinTestToken))
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
	joinTestHandler(s, "").ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("empty join token: %d", rec.Code)
	}
}

// joinTestAs joins as node with the bearer token auth, returning the
// status and the credential issued (if any).
func joinTestAs(t *testing.T, url, auth, node string) (int, string, string) {
	t.Helper()
	resp, body := joinTestPost(t, url, "Bearer "+auth, `{"nodeName":"`+node+`"}`)
	var jr api.JoinResponse
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &jr); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, jr.Token, string(body)
}

// joinTestLease records node's heartbeat now, with a 40 s lease.
func joinTestLease(t *testing.T, s *authTestSetup, node string) {
	t.Helper()
	now := metav1.NewMicroTime(s.clk.Now())
	d := int32(40)
	l := &api.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: api.NamespaceNodeLease, Name: node},
		Spec: api.LeaseSpec{HolderIdentity: &node, RenewTime: &now, LeaseDurationSeconds: &d}}
	if old, err := s.st.Get(api.KindOf(&api.Lease{}), api.NamespaceNodeLease, node); err == nil {
		l.ResourceVersion = old.GetResourceVersion()
		if _, err := s.st.Update(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		return
	}
	authTestCreate(t, s.st, l)
}

// TestJoinBindsNodeCredential: a node credential is bound to the Node it
// was issued for (by uid once the Node exists), so deleting the Node
// revokes it; a second join under a live node's name is refused unless
// the node's own credential asks (rotation); a credential lives
// DefaultNodeCredentialTTL.
func TestJoinBindsNodeCredential(t *testing.T) {
	s := newAuthTestSetup(t)
	srv := httptest.NewServer(joinTestHandler(s, joinTestToken))
	defer srv.Close()
	n1 := auth.Identity{Name: "system:node:n1", Kind: auth.IdentityNode, Node: "n1"}

	// The first join, before the Node exists: the credential registers it.
	code, first, body := joinTestAs(t, srv.URL, joinTestToken, "n1")
	if code != http.StatusOK {
		t.Fatalf("first join: %d %s", code, body)
	}
	var c auth.Claims
	if _, _, err := jwt.NewParser().ParseUnverified(first, &c); err != nil {
		t.Fatal(err)
	}
	if life := c.ExpiresAt.Sub(c.IssuedAt.Time); life != auth.DefaultNodeCredentialTTL || life > 31*24*time.Hour {
		t.Errorf("credential lives %s, want %s", life, auth.DefaultNodeCredentialTTL)
	}
	node := authTestCreate(t, s.st, &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	authTestWantIdentity(t, s.authn, first, n1)
	joinTestLease(t, s, "n1")

	// Another agent with the join token may not take the live node.
	code, _, body = joinTestAs(t, srv.URL, joinTestToken, "n1")
	if code != http.StatusForbidden || !strings.Contains(body, "live") {
		t.Errorf("second join under a live node's name: %d %s", code, body)
	}
	// Nor may another node's credential renew it.
	code, other, body := joinTestAs(t, srv.URL, joinTestToken, "n2")
	if code != http.StatusOK {
		t.Fatalf("join n2: %d %s", code, body)
	}
	if code, _, body = joinTestAs(t, srv.URL, other, "n1"); code != http.StatusForbidden {
		t.Errorf("n2's credential renews n1: %d %s", code, body)
	}
	// The node's own credential renews it, bound to the Node's uid.
	s.clk.SetTime(s.clk.Now().Add(time.Minute))
	code, bound, body := joinTestAs(t, srv.URL, first, "n1")
	if code != http.StatusOK {
		t.Fatalf("renewal: %d %s", code, body)
	}
	c = auth.Claims{}
	if _, _, err := jwt.NewParser().ParseUnverified(bound, &c); err != nil {
		t.Fatal(err)
	}
	if c.Node == nil || c.Node.Name != "n1" || c.Node.UID != string(node.UID) {
		t.Errorf("renewed credential bound to %+v, want n1 uid %s", c.Node, node.UID)
	}
	authTestWantIdentity(t, s.authn, bound, n1)

	// Deleting the Node revokes both; a Node made again under that name
	// revives neither.
	authTestDelete(t, s.st, "nodes", "", "n1")
	authTestWantUnauthenticated(t, s.authn, bound, "credential of a deleted Node")
	s.clk.SetTime(s.clk.Now().Add(11 * time.Minute))
	authTestCreate(t, s.st, &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	authTestWantUnauthenticated(t, s.authn, bound, "credential of a deleted Node, name reused")
	authTestWantUnauthenticated(t, s.authn, first, "unbound credential long older than the Node")

	// Once the node's lease has run out, the join token joins it again
	// (a machine replaced), bound to the Node there is.
	s.clk.SetTime(s.clk.Now().Add(time.Minute))
	code, again, body := joinTestAs(t, srv.URL, joinTestToken, "n1")
	if code != http.StatusOK {
		t.Fatalf("join of a dead node: %d %s", code, body)
	}
	authTestWantIdentity(t, s.authn, again, n1)
}

package apiserver_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

const authTestAdminToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// authTestStore is a real in-memory store on the signer's fake clock.
func authTestStore(t testing.TB, clk *clocktesting.FakePassiveClock) *store.Store {
	t.Helper()
	st, err := store.New(store.Memory{}, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func authTestCreate[T api.Object](t testing.TB, st *store.Store, obj T) T {
	t.Helper()
	out, err := st.Create(context.Background(), obj)
	if err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
	return out.(T)
}

func authTestDelete(t testing.TB, st *store.Store, resource, ns, name string) {
	t.Helper()
	k, _ := api.LookupResource(resource)
	zero := int64(0)
	if _, err := st.Delete(context.Background(), k, ns, name, store.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete %s %s/%s: %v", resource, ns, name, err)
	}
}

func newAuthTestSA(ns, name string) *api.ServiceAccount {
	return &api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func newAuthTestPod(ns, name, node, sa string) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: api.PodSpec{
			NodeName:           node,
			ServiceAccountName: sa,
			Containers:         []api.Container{{Name: "main", Image: "busybox"}},
		},
	}
}

// authTestSetup is a store holding service account "runner" and pod "web"
// running as it, an authenticator over it, and a token bound to both.
type authTestSetup struct {
	st     *store.Store
	clk    *clocktesting.FakePassiveClock
	signer *auth.Signer
	authn  *auth.TokenAuthenticator
	sa     *api.ServiceAccount
	pod    *api.Pod
	token  string
}

func newAuthTestSetup(t testing.TB) *authTestSetup {
	t.Helper()
	signer, clk := tokenTestSigner(t)
	st := authTestStore(t, clk)
	s := &authTestSetup{st: st, clk: clk, signer: signer, authn: auth.NewAuthenticator(st, authTestAdminToken, signer)}
	s.sa = authTestCreate(t, st, newAuthTestSA("default", "runner"))
	s.pod = authTestCreate(t, st, newAuthTestPod("default", "web", "n1", "runner"))
	tok, err := signer.IssueServiceAccountToken(s.sa, s.pod, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.token = tok
	return s
}

func authTestWantIdentity(t *testing.T, a auth.Authenticator, token string, want auth.Identity) {
	t.Helper()
	id, err := a.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	// The groups follow from the kind; the kinds' own tests check them.
	got := *id
	got.Groups, want.Groups = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("identity %+v, want %+v", *id, want)
	}
}

func authTestWantUnauthenticated(t *testing.T, a auth.Authenticator, token, why string) {
	t.Helper()
	id, err := a.Authenticate(context.Background(), token)
	if !errors.Is(err, auth.ErrUnauthenticated) || id != nil {
		t.Fatalf("%s: Authenticate = %+v, %v; want ErrUnauthenticated", why, id, err)
	}
}

func TestAuthAdminToken(t *testing.T) {
	s := newAuthTestSetup(t)
	authTestWantIdentity(t, s.authn, authTestAdminToken, auth.Identity{Name: "admin", Kind: auth.IdentityAdmin})
	authTestWantUnauthenticated(t, s.authn, authTestAdminToken[:len(authTestAdminToken)-1], "admin token prefix")
	authTestWantUnauthenticated(t, s.authn, authTestAdminToken+"0", "admin token plus a byte")
	authTestWantUnauthenticated(t, s.authn, strings.ToUpper(authTestAdminToken), "admin token in upper case")
	authTestWantUnauthenticated(t, s.authn, "", "empty token")

	// No admin token configured: nothing passes for it, not even "".
	none := auth.NewAuthenticator(s.st, "", s.signer)
	authTestWantUnauthenticated(t, none, "", "empty token, no admin token")
	authTestWantUnauthenticated(t, none, authTestAdminToken, "admin token when none is configured")
}

func TestAuthServiceAccountTokenBoundToPod(t *testing.T) {
	s := newAuthTestSetup(t)
	want := auth.Identity{Name: "system:serviceaccount:default:runner", Kind: auth.IdentityServiceAccount, Namespace: "default"}
	authTestWantIdentity(t, s.authn, s.token, want)

	// Deleted gracefully: the token works until the grace period ends.
	grace := int64(30)
	if _, err := s.st.Delete(context.Background(), authTestPodKind(), "default", "web", store.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	authTestWantIdentity(t, s.authn, s.token, want)
	s.clk.SetTime(tokenTestEpoch.Add(31 * time.Second))
	authTestWantUnauthenticated(t, s.authn, s.token, "pod past its deletion time")

	// Gone, and recreated under the same name with a new UID.
	authTestDelete(t, s.st, "pods", "default", "web")
	authTestWantUnauthenticated(t, s.authn, s.token, "pod deleted")
	authTestCreate(t, s.st, newAuthTestPod("default", "web", "n1", "runner"))
	authTestWantUnauthenticated(t, s.authn, s.token, "pod recreated with another uid")
}

func authTestPodKind() *api.Kind {
	k, _ := api.LookupResource("pods")
	return k
}

func TestAuthServiceAccountTokenRevokedWithServiceAccount(t *testing.T) {
	s := newAuthTestSetup(t)
	unbound, err := s.signer.IssueServiceAccountToken(s.sa, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	authTestWantIdentity(t, s.authn, unbound, auth.Identity{Name: "system:serviceaccount:default:runner", Kind: auth.IdentityServiceAccount, Namespace: "default"})

	authTestDelete(t, s.st, "serviceaccounts", "default", "runner")
	authTestWantUnauthenticated(t, s.authn, s.token, "service account deleted (bound token)")
	authTestWantUnauthenticated(t, s.authn, unbound, "service account deleted (unbound token)")

	authTestCreate(t, s.st, newAuthTestSA("default", "runner"))
	authTestWantUnauthenticated(t, s.authn, s.token, "service account recreated with another uid")
	authTestWantUnauthenticated(t, s.authn, unbound, "service account recreated (unbound token)")
}

func TestAuthServiceAccountTokenExpires(t *testing.T) {
	s := newAuthTestSetup(t)
	s.clk.SetTime(tokenTestEpoch.Add(time.Hour + time.Second))
	authTestWantUnauthenticated(t, s.authn, s.token, "expired token")
}

func TestAuthNodeCredential(t *testing.T) {
	s := newAuthTestSetup(t)
	cred, err := s.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	authTestWantIdentity(t, s.authn, cred, auth.Identity{Name: "system:node:n1", Kind: auth.IdentityNode, Node: "n1"})

	other, _ := tokenTestSigner(t)
	foreign, err := other.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	authTestWantUnauthenticated(t, s.authn, foreign, "node credential of another signer")
}

// TestAuthRejectsCrossedTokens signs tokens with the right key whose
// claims do not fit together: each must be refused.
func TestAuthRejectsCrossedTokens(t *testing.T) {
	s := newAuthTestSetup(t)
	now := jwt.NewNumericDate(tokenTestEpoch)
	exp := jwt.NewNumericDate(tokenTestEpoch.Add(time.Hour))
	reg := func(sub string, aud ...string) jwt.RegisteredClaims {
		return jwt.RegisteredClaims{Subject: sub, Audience: aud, IssuedAt: now, NotBefore: now, ExpiresAt: exp}
	}
	saClaims := &auth.KubernetesClaims{
		Namespace:      "default",
		ServiceAccount: &auth.ObjectRef{Name: "runner", UID: string(s.sa.UID)},
	}
	cases := map[string]*auth.Claims{
		"node subject, API audience":       {RegisteredClaims: reg("system:node:n1", auth.DefaultIssuer)},
		"node subject, no audience":        {RegisteredClaims: reg("system:node:n1")},
		"node subject, empty node":         {RegisteredClaims: reg("system:node:", auth.NodeAudience)},
		"node subject with sa claims":      {RegisteredClaims: reg("system:node:n1", auth.NodeAudience), Kubernetes: saClaims},
		"sa subject, node audience":        {RegisteredClaims: reg("system:serviceaccount:default:runner", auth.NodeAudience), Kubernetes: saClaims},
		"sa subject, no kubernetes claims": {RegisteredClaims: reg("system:serviceaccount:default:runner", auth.DefaultIssuer)},
		"sa subject names another sa":      {RegisteredClaims: reg("system:serviceaccount:default:admin", auth.DefaultIssuer), Kubernetes: saClaims},
		"sa subject in another namespace":  {RegisteredClaims: reg("system:serviceaccount:kube:runner", auth.DefaultIssuer), Kubernetes: saClaims},
		"sa subject malformed":             {RegisteredClaims: reg("system:serviceaccount:default", auth.DefaultIssuer), Kubernetes: saClaims},
		"sa subject with extra colon":      {RegisteredClaims: reg("system:serviceaccount:default:runner:x", auth.DefaultIssuer), Kubernetes: saClaims},
		"sa with wrong uid": {RegisteredClaims: reg("system:serviceaccount:default:runner", auth.DefaultIssuer),
			Kubernetes: &auth.KubernetesClaims{Namespace: "default", ServiceAccount: &auth.ObjectRef{Name: "runner", UID: "nope"}}},
		"sa bound to missing pod": {RegisteredClaims: reg("system:serviceaccount:default:runner", auth.DefaultIssuer),
			Kubernetes: &auth.KubernetesClaims{Namespace: "default", ServiceAccount: saClaims.ServiceAccount, Pod: &auth.ObjectRef{Name: "ghost", UID: "x"}}},
		"admin subject": {RegisteredClaims: reg("admin", auth.DefaultIssuer, auth.NodeAudience)},
		"no expiry":     {RegisteredClaims: jwt.RegisteredClaims{Subject: "system:node:n1", Audience: []string{auth.NodeAudience}, IssuedAt: now}},
		"wrong issuer (node)": {RegisteredClaims: func() jwt.RegisteredClaims {
			r := reg("system:node:n1", auth.NodeAudience)
			r.Issuer = "https://x"
			return r
		}()},
	}
	for name, c := range cases {
		tok, err := s.signer.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		authTestWantUnauthenticated(t, s.authn, tok, name)
	}
	// The control: the same recipe with matching claims passes.
	tok, err := s.signer.Sign(&auth.Claims{RegisteredClaims: reg("system:serviceaccount:default:runner", auth.DefaultIssuer), Kubernetes: saClaims})
	if err != nil {
		t.Fatal(err)
	}
	authTestWantIdentity(t, s.authn, tok, auth.Identity{Name: "system:serviceaccount:default:runner", Kind: auth.IdentityServiceAccount, Namespace: "default"})
}

func TestAuthGarbageAndJoinToken(t *testing.T) {
	s := newAuthTestSetup(t)
	const joinToken = "join-secret-join-secret-join-secret"
	// The join token is good only at the join endpoint.
	_ = apiserver.JoinHandler(apiserver.JoinConfig{JoinToken: joinToken, Signer: s.signer})
	for _, tok := range []string{
		joinToken, "x", "...", "a.b.c", "Bearer " + authTestAdminToken, " " + authTestAdminToken,
		s.token + "x", strings.Repeat("a", 1<<16), "\x00\xff.\x00.\x00", "eyJhbGciOiJub25lIn0.e30.",
	} {
		authTestWantUnauthenticated(t, s.authn, tok, "garbage "+strings.ToValidUTF8(tok[:min(len(tok), 20)], "?"))
	}
}

func TestAuthWithoutSignerOrStore(t *testing.T) {
	s := newAuthTestSetup(t)
	noSigner := auth.NewAuthenticator(s.st, authTestAdminToken, nil)
	authTestWantUnauthenticated(t, noSigner, s.token, "JWT with no signer")
	authTestWantIdentity(t, noSigner, authTestAdminToken, *auth.AdminIdentity())

	noStore := auth.NewAuthenticator(nil, authTestAdminToken, s.signer)
	authTestWantUnauthenticated(t, noStore, s.token, "service-account token with no store")
	cred, _ := s.signer.IssueNodeCredential("n2")
	authTestWantUnauthenticated(t, noStore, cred, "node credential with no store")
}

func TestAuthBearerToken(t *testing.T) {
	for header, want := range map[string]string{
		"Bearer abc":   "abc",
		"bearer abc ":  "abc",
		"Bearer  abc":  "abc",
		"Basic abc":    "",
		"Bearer":       "",
		"Bearer ":      "",
		"":             "",
		"Bearerabc":    "",
		"BEARER a.b.c": "a.b.c",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		got, ok := auth.BearerToken(r)
		if got != want || ok != (want != "") {
			t.Errorf("BearerToken(%q) = %q, %v; want %q", header, got, ok, want)
		}
	}
}

// TestAuthCachedTokenStillExpires authenticates a node credential once, so
// that its verified claims are cached, then checks that the cached token is
// refused once it expires.
func TestAuthCachedTokenStillExpires(t *testing.T) {
	s := newAuthTestSetup(t)
	s.signer.NodeCredentialTTL = time.Hour
	cred, err := s.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	want := auth.Identity{Name: "system:node:n1", Kind: auth.IdentityNode, Node: "n1"}
	authTestWantIdentity(t, s.authn, cred, want)
	authTestWantIdentity(t, s.authn, cred, want)
	s.clk.SetTime(tokenTestEpoch.Add(time.Hour + time.Second))
	authTestWantUnauthenticated(t, s.authn, cred, "expired cached node credential")
}

// TestAuthCachedServiceAccountTokenRevoked checks that a cached
// service-account token is still refused once its pod is gone: only the
// signature is cached.
func TestAuthCachedServiceAccountTokenRevoked(t *testing.T) {
	s := newAuthTestSetup(t)
	authTestWantIdentity(t, s.authn, s.token, auth.Identity{Name: "system:serviceaccount:default:runner", Kind: auth.IdentityServiceAccount, Namespace: "default"})
	podKind, _ := api.LookupResource("pods")
	zero := int64(0)
	if _, err := s.st.Delete(context.Background(), podKind, s.pod.Namespace, s.pod.Name, store.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	authTestWantUnauthenticated(t, s.authn, s.token, "token of a deleted pod")
}

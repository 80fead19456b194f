package apiserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
)

var tokenTestEpoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// tokenTestSigner returns a signer over a fresh key, on a fake clock.
func tokenTestSigner(t testing.TB) (*auth.Signer, *clocktesting.FakePassiveClock) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := auth.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(tokenTestEpoch)
	s.Clock = clk
	tokenTestKeys[s] = key
	return s, clk
}

// tokenTestKeyOf is unreachable from outside the package on purpose; tests
// that need a second signer over the same key make both from one key.
func tokenTestKeyOf(t testing.TB, s *auth.Signer) *ecdsa.PrivateKey {
	t.Helper()
	k, ok := tokenTestKeys[s]
	if !ok {
		t.Fatal("signer not made by tokenTestSigner")
	}
	return k
}

var tokenTestKeys = map[*auth.Signer]*ecdsa.PrivateKey{}

func tokenTestSA(ns, name string) *api.ServiceAccount {
	return &api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("sa-uid-" + name)}}
}

func tokenTestPod(ns, name, sa string) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("pod-uid-" + name)},
		Spec:       api.PodSpec{ServiceAccountName: sa, Containers: []api.Container{{Name: "c", Image: "x"}}},
	}
}

func TestTokenServiceAccountRoundTrip(t *testing.T) {
	s, _ := tokenTestSigner(t)
	tok, err := s.IssueServiceAccountToken(tokenTestSA("default", "runner"), tokenTestPod("default", "web", "runner"), 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Verify(tok, auth.DefaultIssuer)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if c.Subject != "system:serviceaccount:default:runner" || c.Issuer != auth.DefaultIssuer {
		t.Errorf("sub %q iss %q", c.Subject, c.Issuer)
	}
	if got := c.ExpiresAt.Sub(c.IssuedAt.Time); got != auth.DefaultServiceAccountTokenTTL {
		t.Errorf("lifetime %v, want %v", got, auth.DefaultServiceAccountTokenTTL)
	}
	if !c.NotBefore.Equal(tokenTestEpoch) || !c.IssuedAt.Equal(tokenTestEpoch) {
		t.Errorf("nbf %v iat %v, want %v", c.NotBefore, c.IssuedAt, tokenTestEpoch)
	}
	k := c.Kubernetes
	if k == nil || k.Namespace != "default" || k.ServiceAccount == nil || *k.ServiceAccount != (auth.ObjectRef{Name: "runner", UID: "sa-uid-runner"}) ||
		k.Pod == nil || *k.Pod != (auth.ObjectRef{Name: "web", UID: "pod-uid-web"}) {
		t.Errorf("kubernetes.io claims = %+v", k)
	}

	// The wire form is Kubernetes': a "kubernetes.io" object and a kid.
	parts := strings.Split(tok, ".")
	hdr, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var h map[string]any
	if err := json.Unmarshal(hdr, &h); err != nil {
		t.Fatal(err)
	}
	if h["alg"] != "ES256" || h["kid"] != s.KeyID() {
		t.Errorf("header %v", h)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var p map[string]any
	if err := json.Unmarshal(payload, &p); err != nil {
		t.Fatal(err)
	}
	kio, _ := p["kubernetes.io"].(map[string]any)
	if kio["namespace"] != "default" {
		t.Errorf("payload %s", payload)
	}
}

func TestTokenServiceAccountTTLAndErrors(t *testing.T) {
	s, _ := tokenTestSigner(t)
	tok, err := s.IssueServiceAccountToken(tokenTestSA("default", "runner"), nil, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Verify(tok, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ExpiresAt.Sub(c.IssuedAt.Time); got != 10*time.Minute {
		t.Errorf("lifetime %v", got)
	}
	if c.Kubernetes.Pod != nil {
		t.Errorf("unbound token has pod claim %+v", c.Kubernetes.Pod)
	}
	for name, tc := range map[string]struct {
		sa  *api.ServiceAccount
		pod *api.Pod
	}{
		"nil sa":           {nil, nil},
		"sa without uid":   {&api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}, nil},
		"pod of other sa":  {tokenTestSA("default", "runner"), tokenTestPod("default", "web", "other")},
		"pod of other ns":  {tokenTestSA("default", "runner"), tokenTestPod("kube", "web", "runner")},
		"default sa empty": {tokenTestSA("default", "runner"), tokenTestPod("default", "web", "")},
	} {
		if _, err := s.IssueServiceAccountToken(tc.sa, tc.pod, 0); err == nil {
			t.Errorf("%s: issued", name)
		}
	}
	// An empty serviceAccountName means "default".
	if _, err := s.IssueServiceAccountToken(tokenTestSA("default", "default"), tokenTestPod("default", "web", ""), 0); err != nil {
		t.Errorf("default service account: %v", err)
	}
}

func TestTokenExpiryOnFakeClock(t *testing.T) {
	s, clk := tokenTestSigner(t)
	tok, err := s.IssueServiceAccountToken(tokenTestSA("default", "runner"), nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clk.SetTime(tokenTestEpoch.Add(59 * time.Minute))
	if _, err := s.Verify(tok, ""); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	clk.SetTime(tokenTestEpoch.Add(time.Hour + time.Second))
	_, err = s.Verify(tok, "")
	if !errors.Is(err, jwt.ErrTokenExpired) || !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("after expiry: %v", err)
	}
	clk.SetTime(tokenTestEpoch.Add(-time.Minute))
	if _, err := s.Verify(tok, ""); err == nil {
		t.Fatal("accepted before nbf/iat")
	}
}

func TestTokenNodeCredential(t *testing.T) {
	s, clk := tokenTestSigner(t)
	tok, err := s.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Verify(tok, auth.NodeAudience)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "system:node:n1" || c.Kubernetes != nil {
		t.Errorf("claims %+v", c)
	}
	if _, err := s.Verify(tok, auth.DefaultIssuer); !errors.Is(err, jwt.ErrTokenInvalidAudience) {
		t.Errorf("node credential with API audience: %v", err)
	}
	clk.SetTime(tokenTestEpoch.Add(auth.DefaultNodeCredentialTTL - time.Hour))
	if _, err := s.Verify(tok, auth.NodeAudience); err != nil {
		t.Errorf("node credential within its lifetime: %v", err)
	}
	if _, err := s.IssueNodeCredential(""); err == nil {
		t.Error("issued a credential for no node")
	}
}

func TestTokenRejects(t *testing.T) {
	s, _ := tokenTestSigner(t)
	other, _ := tokenTestSigner(t)
	good, err := s.IssueServiceAccountToken(tokenTestSA("default", "runner"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")

	fromOther, err := other.IssueServiceAccountToken(tokenTestSA("default", "runner"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}

	// Another key, claiming this signer's kid.
	forgedKid := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.RegisteredClaims{
		Issuer: auth.DefaultIssuer, Subject: "system:serviceaccount:default:runner",
		ExpiresAt: jwt.NewNumericDate(tokenTestEpoch.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(tokenTestEpoch),
	})
	forgedKid.Header["kid"] = s.KeyID()
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forged, err := forgedKid.SignedString(otherKey)
	if err != nil {
		t.Fatal(err)
	}

	// alg "none" with the right kid.
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.RegisteredClaims{Issuer: auth.DefaultIssuer, Subject: "system:serviceaccount:default:runner"})
	none.Header["kid"] = s.KeyID()
	noneTok, err := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}

	// HS256 keyed with the public key's bytes (algorithm confusion).
	pub, _ := s.PublicKey().Bytes()
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Issuer: auth.DefaultIssuer})
	hs.Header["kid"] = s.KeyID()
	hsTok, err := hs.SignedString(pub)
	if err != nil {
		t.Fatal(err)
	}

	// Payload swapped for another subject, signature kept.
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	evil := strings.Replace(string(payload), "runner", "admin1", 1)
	tamperedPayload := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(evil)) + "." + parts[2]

	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sig[5] ^= 0x40
	tamperedSig := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(sig)

	// The same key under another issuer name.
	otherIssuer, err := auth.NewSigner(tokenTestKeyOf(t, s))
	if err != nil {
		t.Fatal(err)
	}
	otherIssuer.Issuer = "https://elsewhere"
	otherIssuer.Clock = s.Clock

	cases := map[string]struct {
		tok string
		v   *auth.Signer
		aud string
	}{
		"another key":          {fromOther, s, ""},
		"forged kid":           {forged, s, ""},
		"alg none":             {noneTok, s, ""},
		"alg HS256":            {hsTok, s, ""},
		"tampered payload":     {tamperedPayload, s, ""},
		"tampered signature":   {tamperedSig, s, ""},
		"wrong audience":       {good, s, "https://vault.example"},
		"garbage":              {"not-a-jwt", s, ""},
		"empty":                {"", s, ""},
		"truncated":            {parts[0] + "." + parts[1], s, ""},
		"other issuer expects": {good, otherIssuer, ""},
	}
	for name, tc := range cases {
		if _, err := tc.v.Verify(tc.tok, tc.aud); !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("%s: Verify = %v, want ErrInvalidToken", name, err)
		}
	}
	if _, err := s.Verify(good, ""); err != nil {
		t.Fatalf("good token: %v", err)
	}
}

func TestTokenNewSignerRejectsOtherCurves(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.NewSigner(key); err == nil {
		t.Error("accepted a P-384 key")
	}
	if _, err := auth.NewSigner(nil); err == nil {
		t.Error("accepted no key")
	}
}

// TestTokenJWKSVerifiesToken plays a verifier that knows only the JWKS
// document: it rebuilds the public key from the JWK and checks a token.
func TestTokenJWKSVerifiesToken(t *testing.T) {
	s, _ := tokenTestSigner(t)
	srv := httptest.NewServer(apiserver.JWKSHandler(s))
	defer srv.Close()

	resp, err := http.Get(srv.URL + auth.JWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var set auth.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 {
		t.Fatalf("keys: %+v", set.Keys)
	}
	jwk := set.Keys[0]
	if jwk.Kty != "EC" || jwk.Crv != "P-256" || jwk.Alg != "ES256" || jwk.Use != "sig" || jwk.Kid != s.KeyID() {
		t.Errorf("jwk %+v", jwk)
	}
	// The kid is the RFC 7638 thumbprint of the JWK.
	canon, _ := json.Marshal(map[string]string{"crv": jwk.Crv, "kty": jwk.Kty, "x": jwk.X, "y": jwk.Y})
	sum := sha256.Sum256(canon)
	if want := base64.RawURLEncoding.EncodeToString(sum[:]); jwk.Kid != want {
		t.Errorf("kid %s, thumbprint %s", jwk.Kid, want)
	}

	pub, err := jwk.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.IssueServiceAccountToken(tokenTestSA("default", "runner"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := jwt.Parse(tok, func(tk *jwt.Token) (any, error) {
		if tk.Header["kid"] != jwk.Kid {
			return nil, errors.New("kid")
		}
		return pub, nil
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithTimeFunc(func() time.Time { return tokenTestEpoch }))
	if err != nil || !parsed.Valid {
		t.Fatalf("token does not verify with the JWKS key: %v", err)
	}

	post, err := http.Post(srv.URL+auth.JWKSPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", post.StatusCode)
	}
}

func TestTokenJWKRejectsBadKeys(t *testing.T) {
	s, _ := tokenTestSigner(t)
	good := s.JWKS().Keys[0]
	for name, mutate := range map[string]func(k *auth.JSONWebKey){
		"rsa":       func(k *auth.JSONWebKey) { k.Kty = "RSA" },
		"p384":      func(k *auth.JSONWebKey) { k.Crv = "P-384" },
		"short x":   func(k *auth.JSONWebKey) { k.X = k.X[:10] },
		"bad b64":   func(k *auth.JSONWebKey) { k.Y = "!!" },
		"off curve": func(k *auth.JSONWebKey) { k.X, k.Y = k.Y, k.X },
	} {
		k := good
		mutate(&k)
		if _, err := k.PublicKey(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTokenOIDCDiscovery(t *testing.T) {
	s, _ := tokenTestSigner(t)
	rec := httptest.NewRecorder()
	apiserver.OIDCDiscoveryHandler(s).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, auth.OIDCDiscoveryPath, nil))
	var doc auth.OIDCDiscovery
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Issuer != auth.DefaultIssuer || doc.JWKSURI != auth.DefaultIssuer+auth.JWKSPath ||
		len(doc.SigningAlgorithms) != 1 || doc.SigningAlgorithms[0] != "ES256" {
		t.Errorf("discovery %+v", doc)
	}
}

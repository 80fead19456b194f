package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
)

// Token defaults and names. They follow Kubernetes so that workloads and
// tools that check service-account tokens against an OIDC issuer keep
// working unchanged.
const (
	// DefaultIssuer is the iss claim of every token berth signs; it is the
	// issuer Kubernetes clusters use by default, so libraries that expect
	// in-cluster tokens accept berth's.
	DefaultIssuer = "https://berth.default.svc"
	// NodeAudience is the audience of node credentials. It differs from
	// the API audience so that a service-account token can never pass for
	// a node and a node credential never for a service account.
	NodeAudience = "berth-node"
	// DefaultServiceAccountTokenTTL is how long a service-account token
	// lives when the caller asks for no particular lifetime; the agent
	// rotates tokens well before then.
	DefaultServiceAccountTokenTTL = time.Hour
	// DefaultNodeCredentialTTL is how long a node credential lives. The
	// agent renews it with itself at about 80% of its life, as the kubelet
	// rotates its client certificate, and the credential is bound to its
	// Node besides: a leaked one serves a month at most, and not past the
	// Node's deletion.
	DefaultNodeCredentialTTL = 30 * 24 * time.Hour

	// NodeUserPrefix starts the user name of every node identity.
	NodeUserPrefix = "system:node:"
	// ServiceAccountUserPrefix starts the user name of every service
	// account identity.
	ServiceAccountUserPrefix = "system:serviceaccount:"
)

// ErrInvalidToken is wrapped by every error Signer.Verify returns; it is
// itself wrapped in ErrUnauthenticated by the authenticator.
var ErrInvalidToken = errors.New("invalid token")

// Claims are the claims of the tokens berth signs: the registered ones plus,
// for service accounts, the "kubernetes.io" claim Kubernetes puts in bound
// service-account tokens, so the same libraries can read them.
type Claims struct {
	jwt.RegisteredClaims
	Kubernetes *KubernetesClaims `json:"kubernetes.io,omitempty"`
	// Node binds a node credential to its Node: the credential is good
	// only while a Node of that name and uid exists. A credential issued
	// before its Node existed carries no uid (see nodeCredentialLive).
	Node *ObjectRef `json:"berth.dev/node,omitempty"`
}

// KubernetesClaims bind a service-account token to the objects it was issued
// for; the authenticator rejects the token once any of them is gone.
type KubernetesClaims struct {
	Namespace      string     `json:"namespace,omitempty"`
	ServiceAccount *ObjectRef `json:"serviceaccount,omitempty"`
	Pod            *ObjectRef `json:"pod,omitempty"`
}

// ObjectRef names an object and the UID it had when the token was issued,
// so that a deleted and recreated object of the same name does not revive
// the token.
type ObjectRef struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// Signer issues and verifies the JWTs berth uses as service-account tokens
// and node credentials, with one ECDSA P-256 key (ES256). Set the exported
// fields before first use; a Signer is then safe for concurrent use.
type Signer struct {
	// Issuer is the iss claim of issued tokens and the only one accepted.
	Issuer string
	// APIAudiences are the audiences service-account tokens are issued
	// for; a service-account token must carry one of them. Defaults to
	// Issuer, as in Kubernetes.
	APIAudiences []string
	// NodeCredentialTTL is the lifetime of node credentials.
	NodeCredentialTTL time.Duration
	// Clock stamps and checks times; tests use a fake one.
	Clock clock.PassiveClock

	key *ecdsa.PrivateKey
	kid string
}

// NewSigner makes a signer over the service-account signing key. Only P-256
// keys are accepted because ES256 is the one algorithm berth speaks.
func NewSigner(key *ecdsa.PrivateKey) (*Signer, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return nil, errors.New("service-account signing key: want an ECDSA P-256 key")
	}
	kid, err := keyThumbprint(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return &Signer{
		Issuer:            DefaultIssuer,
		NodeCredentialTTL: DefaultNodeCredentialTTL,
		Clock:             clock.RealClock{},
		key:               key,
		kid:               kid,
	}, nil
}

// KeyID is the kid header of issued tokens: the RFC 7638 thumbprint of the
// public key, so verifiers can pick the key from the JWKS.
func (s *Signer) KeyID() string { return s.kid }

// PublicKey is the key that verifies issued tokens.
func (s *Signer) PublicKey() *ecdsa.PublicKey { return &s.key.PublicKey }

// Now is the signer's clock's time, at which tokens are stamped and
// checked.
func (s *Signer) Now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

// Audiences are the audiences service-account tokens are issued for by
// default and accepted with: APIAudiences, or the Issuer alone.
func (s *Signer) Audiences() []string {
	if len(s.APIAudiences) > 0 {
		return s.APIAudiences
	}
	return []string{s.Issuer}
}

// Sign signs claims as they are, adding only the issuer when it is unset.
// It is the primitive under the Issue methods.
func (s *Signer) Sign(c *Claims) (string, error) {
	if c.Issuer == "" {
		c.Issuer = s.Issuer
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	t.Header["kid"] = s.kid
	out, err := t.SignedString(s.key)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return out, nil
}

// stamped returns registered claims for a token living ttl from now.
func (s *Signer) stamped(sub string, aud []string, ttl time.Duration) jwt.RegisteredClaims {
	now := s.Now()
	return jwt.RegisteredClaims{
		Issuer:    s.Issuer,
		Subject:   sub,
		Audience:  aud,
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
}

// IssueServiceAccountToken issues a token for sa bound to pod, the way
// Kubernetes' TokenRequest does: it is valid for ttl (the default when ttl
// is not positive) and only while both objects exist with the UIDs they
// have now. pod may be nil for a token bound to the service account alone.
func (s *Signer) IssueServiceAccountToken(sa *api.ServiceAccount, pod *api.Pod, ttl time.Duration) (string, error) {
	return s.IssueAudienceToken(sa, pod, nil, ttl)
}

// IssueAudienceToken is IssueServiceAccountToken for audiences, the
// TokenRequest's spec.audiences: a token for another service (a
// projected serviceAccountToken's audience) that this API server does
// not take. None is the API server's own.
func (s *Signer) IssueAudienceToken(sa *api.ServiceAccount, pod *api.Pod, audiences []string, ttl time.Duration) (string, error) {
	if len(audiences) == 0 {
		audiences = s.Audiences()
	}
	if sa == nil || sa.Name == "" || sa.Namespace == "" || sa.UID == "" {
		return "", errors.New("issue service-account token: the service account needs a namespace, name and uid")
	}
	if ttl <= 0 {
		ttl = DefaultServiceAccountTokenTTL
	}
	kc := &KubernetesClaims{
		Namespace:      sa.Namespace,
		ServiceAccount: &ObjectRef{Name: sa.Name, UID: string(sa.UID)},
	}
	if pod != nil {
		if pod.Namespace != sa.Namespace || saNameOfPod(pod) != sa.Name || pod.UID == "" {
			return "", fmt.Errorf("issue service-account token: pod %s/%s does not run as service account %s/%s",
				pod.Namespace, pod.Name, sa.Namespace, sa.Name)
		}
		kc.Pod = &ObjectRef{Name: pod.Name, UID: string(pod.UID)}
	}
	return s.Sign(&Claims{
		RegisteredClaims: s.stamped(ServiceAccountUserName(sa.Namespace, sa.Name), audiences, ttl),
		Kubernetes:       kc,
	})
}

// IssueNodeCredential issues the credential a node uses after it has joined:
// a token whose subject is system:node:<node> and whose audience is
// NodeAudience, bound to no Node yet (see IssueBoundNodeCredential).
func (s *Signer) IssueNodeCredential(node string) (string, error) {
	return s.IssueBoundNodeCredential(node, "")
}

// IssueBoundNodeCredential is IssueNodeCredential bound to the Node of
// that name with uid: the authenticator accepts it only while that Node
// exists. With no uid (the Node does not exist yet), it is accepted only
// until a Node of that name older than the credential is found.
func (s *Signer) IssueBoundNodeCredential(node string, uid types.UID) (string, error) {
	if node == "" {
		return "", errors.New("issue node credential: no node name")
	}
	ttl := s.NodeCredentialTTL
	if ttl <= 0 {
		ttl = DefaultNodeCredentialTTL
	}
	return s.Sign(&Claims{
		RegisteredClaims: s.stamped(NodeUserName(node), []string{NodeAudience}, ttl),
		Node:             &ObjectRef{Name: node, UID: string(uid)},
	})
}

// Verify checks a token's signature, algorithm, key ID, issuer and times,
// and that its audience includes audience (any audience when empty). Every
// error wraps ErrInvalidToken. It does not look at the store: the
// authenticator does that.
func (s *Signer) Verify(token, audience string) (*Claims, error) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}),
		jwt.WithIssuer(s.Issuer),
		jwt.WithTimeFunc(s.Now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
	}
	if audience != "" {
		opts = append(opts, jwt.WithAudience(audience))
	}
	c := &Claims{}
	_, err := jwt.NewParser(opts...).ParseWithClaims(token, c, func(t *jwt.Token) (any, error) {
		if kid, _ := t.Header["kid"].(string); kid != s.kid {
			return nil, errors.New("unknown key id")
		}
		return &s.key.PublicKey, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	return c, nil
}

// hasAudience reports whether the claims name any of auds.
func (c *Claims) hasAudience(auds ...string) bool {
	return slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(auds, a) })
}

// NodeUserName is the user name of a node's identity.
func NodeUserName(node string) string { return NodeUserPrefix + node }

// ServiceAccountUserName is the user name of a service account's identity.
func ServiceAccountUserName(namespace, name string) string {
	return ServiceAccountUserPrefix + namespace + ":" + name
}

// SplitServiceAccountUserName parses system:serviceaccount:<ns>:<name>.
func SplitServiceAccountUserName(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, ServiceAccountUserPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// podServiceAccount is the service account a pod runs as; an empty name
// means "default", as the defaulting in api does.
func saNameOfPod(pod *api.Pod) string {
	if pod.Spec.ServiceAccountName == "" {
		return "default"
	}
	return pod.Spec.ServiceAccountName
}

// keyThumbprint is the RFC 7638 SHA-256 JWK thumbprint of a P-256 key.
func keyThumbprint(pub *ecdsa.PublicKey) (string, error) {
	jwk, err := newJSONWebKey(pub, "")
	if err != nil {
		return "", err
	}
	// The members in lexicographic order, no whitespace (RFC 7638 §3.2).
	canon := fmt.Sprintf(`{"crv":%q,"kty":%q,"x":%q,"y":%q}`, jwk.Crv, jwk.Kty, jwk.X, jwk.Y)
	sum := sha256.Sum256([]byte(canon))
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// IdentityKind says which of berth's kinds of caller a request comes from;
// authorization rules are chosen by it.
type IdentityKind string

// Identity kinds.
const (
	IdentityAdmin          IdentityKind = "admin"
	IdentityNode           IdentityKind = "node"
	IdentityServiceAccount IdentityKind = "serviceaccount"
	// IdentityUser is any other user: one of a client certificate signed
	// by the cluster CA, of the static token file, or one impersonated
	// (kubectl --as). RBAC decides what it may do.
	IdentityUser IdentityKind = "user"
)

// Identity is who made a request, as the authenticator proved it.
type Identity struct {
	// Name is the user name Kubernetes would report: "admin",
	// "system:node:<node>" or "system:serviceaccount:<ns>:<sa>".
	Name string
	Kind IdentityKind
	// Node is the node's name, for node identities.
	Node string
	// Namespace is the service account's namespace, for service accounts.
	Namespace string
	// Groups are the groups Kubernetes would put the caller in, which
	// RBAC bindings name: system:masters for the admin,
	// system:serviceaccounts:NS for a service account, a certificate's
	// organizations, and system:authenticated for every one.
	Groups []string
}

// Well-known groups, as Kubernetes names them.
const (
	GroupMasters         = user.SystemPrivilegedGroup
	GroupAuthenticated   = user.AllAuthenticated
	GroupNodes           = user.NodesGroup
	GroupServiceAccounts = serviceaccount.AllServiceAccountsGroup
)

// UserInfo is the identity as k8s.io/apiserver's authorizers take it.
func (id *Identity) UserInfo() user.Info {
	if id == nil {
		return &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	}
	return &user.DefaultInfo{Name: id.Name, Groups: id.Groups}
}

// Privileged reports whether the identity is the admin or a member of
// system:masters, whom no authorizer refuses, as in Kubernetes.
func (id *Identity) Privileged() bool {
	return id != nil && (id.Kind == IdentityAdmin || slices.Contains(id.Groups, GroupMasters))
}

// ErrUnauthenticated is wrapped by every error an Authenticator returns for
// a token it does not accept; the API server answers it with 401.
var ErrUnauthenticated = errors.New("unauthenticated")

// Authenticator maps a bearer token to an identity; ErrUnauthenticated
// (wrapped) when the token is bad.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Identity, error)
}

// Attributes describe one request as the authorizer sees it.
type Attributes struct {
	// Verb is one of get list watch create update patch delete.
	Verb string
	Kind *api.Kind
	// Subresource is "", "status", "log" (or "token" on serviceaccounts).
	Namespace, Name, Subresource string
	// Object is the new object for create/update/patch.
	Object api.Object
	// Old is the stored object for get/update/patch/delete (nil for
	// list/watch/create, or when it does not exist).
	Old api.Object
	// FieldSelector is the request's field selector for list/watch; may be nil.
	FieldSelector fields.Selector
	// LabelSelector is the request's label selector for list/watch; nil
	// when it has none.
	LabelSelector labels.Selector
	// Path is the URL path of a request that is not about a resource
	// (Kind nil): "/healthz", "/metrics".
	Path string
}

// Authorizer decides whether an identity may make a request.
type Authorizer interface {
	Authorize(ctx context.Context, id *Identity, a Attributes) error
}

// BearerToken returns the token of a request's "Authorization: Bearer"
// header, and false when there is none.
func BearerToken(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// AdminIdentity is the identity of the admin token.
func AdminIdentity() *Identity {
	return &Identity{Name: "admin", Kind: IdentityAdmin, Groups: []string{GroupMasters, GroupAuthenticated}}
}

// NodeIdentity is the identity of a node's credential.
func NodeIdentity(node string) *Identity {
	return &Identity{Name: NodeUserName(node), Kind: IdentityNode, Node: node, Groups: []string{GroupNodes, GroupAuthenticated}}
}

// ServiceAccountIdentity is the identity of a service account's token.
func ServiceAccountIdentity(namespace, name string) *Identity {
	return &Identity{Name: ServiceAccountUserName(namespace, name), Kind: IdentityServiceAccount, Namespace: namespace,
		Groups: []string{GroupServiceAccounts, serviceaccount.MakeNamespaceGroupName(namespace), GroupAuthenticated}}
}

// UserIdentity is the identity of a user with groups (a client
// certificate's organizations, the token file's groups), who is also in
// system:authenticated. A member of system:masters is an admin.
func UserIdentity(name string, groups []string) *Identity {
	id := &Identity{Name: name, Kind: IdentityUser, Groups: slices.Clone(groups)}
	if !slices.Contains(id.Groups, GroupAuthenticated) {
		id.Groups = append(id.Groups, GroupAuthenticated)
	}
	if slices.Contains(id.Groups, GroupMasters) {
		id.Kind = IdentityAdmin
	}
	return id
}

// String returns the user name, for logs and messages.
func (id *Identity) String() string {
	if id == nil {
		return "system:anonymous"
	}
	return id.Name
}

// TokenAuthenticator accepts berth's three kinds of bearer token: the admin
// token, node credentials and service-account tokens. The node join token
// is deliberately not among them: it is good only at JoinPath.
type TokenAuthenticator struct {
	store *store.Store
	admin [sha256.Size]byte
	// static are the users of the token file; set before first use.
	static   StaticTokens
	signer   *Signer
	verified verifiedTokens
}

// NewAuthenticator makes the authenticator of the API server. adminToken
// may be empty (no admin token is then accepted); signer may be nil (no
// JWT is then accepted); st is where bound service-account tokens are
// checked against the pods and service accounts they name.
func NewAuthenticator(st *store.Store, adminToken string, signer *Signer) *TokenAuthenticator {
	a := &TokenAuthenticator{store: st, signer: signer}
	if adminToken != "" {
		a.admin = sha256.Sum256([]byte(adminToken))
	}
	return a
}

// WithStaticTokens adds the users of a token file (ReadTokenFile); call it
// before the first request.
func (a *TokenAuthenticator) WithStaticTokens(t StaticTokens) *TokenAuthenticator {
	a.static = t
	return a
}

// Authenticate implements Authenticator.
func (a *TokenAuthenticator) Authenticate(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, fmt.Errorf("%w: no token", ErrUnauthenticated)
	}
	// Comparing digests keeps the comparison constant-time in the length too.
	got := sha256.Sum256([]byte(token))
	if a.admin != ([sha256.Size]byte{}) && subtle.ConstantTimeCompare(got[:], a.admin[:]) == 1 {
		return AdminIdentity(), nil
	}
	// A map lookup by the digest reveals nothing of the token.
	if id, ok := a.static[got]; ok {
		return id, nil
	}
	if a.signer == nil || strings.Count(token, ".") != 2 {
		return nil, fmt.Errorf("%w: invalid bearer token", ErrUnauthenticated)
	}
	c, ok := a.verified.get(got, a.signer.Now())
	if !ok {
		var err error
		if c, err = a.signer.Verify(token, ""); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		}
		a.verified.put(got, c)
	}
	switch {
	case strings.HasPrefix(c.Subject, NodeUserPrefix):
		return a.node(c)
	case strings.HasPrefix(c.Subject, ServiceAccountUserPrefix):
		return a.serviceAccount(c)
	}
	return nil, fmt.Errorf("%w: token subject %q is neither a node nor a service account", ErrUnauthenticated, c.Subject)
}

// node accepts a node credential only while the Node it is bound to
// lives (nodeCredentialLive): deleting the Node revokes it.
func (a *TokenAuthenticator) node(c *Claims) (*Identity, error) {
	node := strings.TrimPrefix(c.Subject, NodeUserPrefix)
	if !c.hasAudience(NodeAudience) || c.Kubernetes != nil || node == "" || (c.Node != nil && c.Node.Name != node) {
		return nil, fmt.Errorf("%w: %s: not a node credential", ErrUnauthenticated, c.Subject)
	}
	if a.store == nil {
		return nil, fmt.Errorf("%w: %s: no store to check the credential against", ErrUnauthenticated, c.Subject)
	}
	if err := nodeCredentialLive(a.store.Snapshot(), node, c); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnauthenticated, c.Subject, err)
	}
	return NodeIdentity(node), nil
}

// nodeCredentialLive checks a node credential against the Node of its
// name. One bound to a uid needs that Node, with that uid. One bound to
// none (issued at the node's first join, before its agent registered the
// Node) is good while there is no Node of that name, or while the one
// there was made within unboundNodeWindow after the credential: its agent
// registered it, and renews the credential for a bound one at once. A
// Node made again after its deletion revives no credential of the one
// before. A credential of an older berth, which names no Node at all, is
// taken as it was issued: the agent replaces it at its next start or
// renewal.
func nodeCredentialLive(snap *store.Snapshot, node string, c *Claims) error {
	if c.Node == nil {
		return nil
	}
	uid := c.Node.UID
	obj, err := snap.Get(authNodeKind, "", node)
	if store.IsNotFound(err) {
		if uid != "" {
			return fmt.Errorf("node %s the credential is bound to no longer exists", node)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if uid != "" {
		if string(obj.GetUID()) != uid {
			return fmt.Errorf("node %s the credential is bound to was deleted (uid %s, now %s)", node, uid, obj.GetUID())
		}
		return nil
	}
	created := obj.GetCreationTimestamp().Time
	if c.IssuedAt == nil || created.Before(c.IssuedAt.Time) || created.After(c.IssuedAt.Add(unboundNodeWindow)) {
		return fmt.Errorf("node %s was not registered with this credential, which is bound to no Node: the agent must join again", node)
	}
	return nil
}

// unboundNodeWindow is how long after a node's first join its agent may
// register the Node with the credential of that join.
const unboundNodeWindow = 10 * time.Minute

// serviceAccount accepts a service-account token only while the service
// account, and the pod it is bound to, exist with the UIDs in the token and
// are not past their deletion time: deleting either revokes the token.
func (a *TokenAuthenticator) serviceAccount(c *Claims) (*Identity, error) {
	ns, name, ok := SplitServiceAccountUserName(c.Subject)
	kc := c.Kubernetes
	if !ok || !c.hasAudience(a.signer.Audiences()...) || kc == nil || kc.ServiceAccount == nil ||
		kc.Namespace != ns || kc.ServiceAccount.Name != name || kc.ServiceAccount.UID == "" {
		return nil, fmt.Errorf("%w: %s: not a service-account token", ErrUnauthenticated, c.Subject)
	}
	if a.store == nil {
		return nil, fmt.Errorf("%w: %s: no store to check the token against", ErrUnauthenticated, c.Subject)
	}
	now := a.signer.Now()
	snap := a.store.Snapshot()
	if err := boundObjectLive(snap, authSAKind, ns, kc.ServiceAccount, now); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnauthenticated, c.Subject, err)
	}
	if kc.Pod != nil {
		if err := boundObjectLive(snap, authPodKind, ns, kc.Pod, now); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrUnauthenticated, c.Subject, err)
		}
	}
	return ServiceAccountIdentity(ns, name), nil
}

var (
	authPodKind = api.KindOf(&api.Pod{})
	authSAKind  = api.KindOf(&api.ServiceAccount{})
)

// boundObjectLive checks that the object a token is bound to still exists
// with the same UID and is not past its deletion time (during a graceful
// deletion its tokens keep working, as in Kubernetes).
func boundObjectLive(snap *store.Snapshot, k *api.Kind, ns string, ref *ObjectRef, now time.Time) error {
	obj, err := snap.Get(k, ns, ref.Name)
	if err != nil {
		if store.IsNotFound(err) {
			return fmt.Errorf("%s %s/%s the token is bound to no longer exists", k.Singular, ns, ref.Name)
		}
		return err
	}
	if string(obj.GetUID()) != ref.UID {
		return fmt.Errorf("%s %s/%s the token is bound to was deleted (uid %s, now %s)", k.Singular, ns, ref.Name, ref.UID, obj.GetUID())
	}
	if dt := obj.GetDeletionTimestamp(); dt != nil && !now.Before(dt.Time) {
		return fmt.Errorf("%s %s/%s the token is bound to is being deleted", k.Singular, ns, ref.Name)
	}
	return nil
}

type identityKey struct{}

// WithIdentity returns a copy of ctx that carries id, the identity that
// authenticated the request (IdentityFromContext reads it).
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the identity that authenticated the request
// whose context ctx is.
func IdentityFromContext(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(*Identity)
	return id, ok && id != nil
}

package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/rbac"
	"github.com/berth-dev/berth/store"
)

// Verbs, as Attributes.Verb spells them.
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbWatch  = "watch"
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbPatch  = "patch"
	VerbDelete = "delete"
	// VerbDeleteCollection deletes what a list's selectors pick.
	VerbDeleteCollection = "deletecollection"
)

// ErrForbidden is wrapped by every *ForbiddenError, for errors.Is.
var ErrForbidden = errors.New("forbidden")

// ForbiddenError says who may not do what; the API server answers it with
// 403 and its message, which reads like Kubernetes' so that kubectl users
// and scripts recognise it.
type ForbiddenError struct {
	// User is the identity's name.
	User string
	Verb string
	// Kind is nil for a request that is not about a resource.
	Kind                         *api.Kind
	Namespace, Name, Subresource string
	// Reason, when set, says which rule refused the request.
	Reason string
}

// Forbidden builds the error for a refused request.
func Forbidden(id *Identity, a Attributes, reason string) *ForbiddenError {
	return &ForbiddenError{
		User:        id.String(),
		Verb:        a.Verb,
		Kind:        a.Kind,
		Namespace:   a.Namespace,
		Name:        a.Name,
		Subresource: a.Subresource,
		Reason:      reason,
	}
}

// Error reads like Kubernetes':
//
//	pods "web" is forbidden: User "system:node:n1" cannot update resource "pods" in API group "" in the namespace "default"
func (e *ForbiddenError) Error() string {
	if e.Kind == nil {
		msg := fmt.Sprintf("forbidden: User %q cannot %s this path", e.User, e.Verb)
		if e.Reason != "" {
			msg += ": " + e.Reason
		}
		return msg
	}
	gr := e.Kind.GroupResource()
	msg := gr.String()
	if e.Name != "" {
		msg += fmt.Sprintf(" %q", e.Name)
	}
	resource := gr.Resource
	if e.Subresource != "" {
		resource += "/" + e.Subresource
	}
	msg += fmt.Sprintf(" is forbidden: User %q cannot %s resource %q in API group %q", e.User, e.Verb, resource, gr.Group)
	if e.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", e.Namespace)
	} else {
		msg += " at the cluster scope"
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrForbidden) true.
func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

// ForbiddenStatus is the Status of a refusal. It keeps the authorizer's message whole: it already names
// the user, verb and resource as Kubernetes' RBAC messages do.
func ForbiddenStatus(e *ForbiddenError) *apierrors.StatusError {
	st := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusForbidden,
		Reason:  metav1.StatusReasonForbidden,
		Message: e.Error(),
	}}
	if e.Kind != nil {
		st.ErrStatus.Details = &metav1.StatusDetails{Name: e.Name, Group: e.Kind.GVK.Group, Kind: e.Kind.Resource}
	}
	return st
}

// Policy is berth's authorization chain, Kubernetes' default one: the
// Node authorizer for nodes (a node reaches what running its pods needs,
// and nothing RBAC could add), everything for the admin and the members
// of system:masters, then RBAC, which grants a service account or a user
// exactly what the Roles and ClusterRoles bound to it hold (the default
// service account: discovery and the self reviews). It reads the store to
// learn which objects a node's pods reference, in the manner of
// Kubernetes' node authorizer, and the RBAC objects.
type Policy struct {
	store *store.Store
	rbac  *rbac.Authorizer
}

// NewAuthorizer makes the API server's authorizer over the store it serves.
func NewAuthorizer(st *store.Store) *Policy { return &Policy{store: st, rbac: rbac.New(st)} }

// RBAC is the chain's RBAC authorizer, for the escalation check and the
// reviews.
func (p *Policy) RBAC() *rbac.Authorizer { return p.rbac }

// Authorize implements Authorizer. Every refusal is a *ForbiddenError.
func (p *Policy) Authorize(ctx context.Context, id *Identity, a Attributes) error {
	switch {
	case id == nil:
		return Forbidden(id, a, "no identity")
	case id.Kind == IdentityNode:
		if a.Kind == nil {
			return Forbidden(id, a, "")
		}
		return p.authorizeNode(id, a)
	case id.Privileged():
		return nil
	}
	d, _, err := p.rbac.Authorize(ctx, RBACAttributes(id, a))
	if err != nil {
		return fmt.Errorf("authorize: %w", err)
	}
	if d == authorizer.DecisionAllow {
		return nil
	}
	return Forbidden(id, a, "")
}

// RBACAttributes describes a request as k8s.io/apiserver's authorizers
// take it. A create names no object (a rule's resourceNames never allow
// one, as in Kubernetes), unless it is a subresource of a named one (an
// eviction, a token); a list or watch of one name through the
// metadata.name field selector names it.
func RBACAttributes(id *Identity, a Attributes) authorizer.AttributesRecord {
	r := authorizer.AttributesRecord{User: id.UserInfo(), Verb: a.Verb, Namespace: a.Namespace, Name: a.Name}
	if a.Kind == nil {
		r.Path = a.Path
		return r
	}
	r.ResourceRequest = true
	r.APIGroup, r.APIVersion, r.Resource, r.Subresource = a.Kind.GVK.Group, a.Kind.GVK.Version, a.Kind.Resource, a.Subresource
	switch a.Verb {
	case VerbCreate:
		if a.Subresource == "" {
			r.Name = ""
		}
	case VerbList, VerbWatch:
		if a.FieldSelector != nil {
			if v, ok := a.FieldSelector.RequiresExactMatch(nodeRuleFieldName); ok {
				r.Name = v
			}
		}
	}
	return r
}

// RulesFor implements RulesLister: the rules RBAC grants the identity
// in a namespace. A node's rules depend on the objects its pods
// reference, as in Kubernetes' node authorizer, which does not list them
// either.
func (p *Policy) RulesFor(id *Identity, namespace string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, string) {
	if id.Kind == IdentityNode {
		return nil, nil, "a node's permissions are decided object by object (its Node and Lease, the pods bound to it and what they reference) and cannot be listed as rules"
	}
	ix, err := p.rbac.Index()
	if err != nil {
		return nil, nil, err.Error()
	}
	var (
		res    []authorizationv1.ResourceRule
		nonRes []authorizationv1.NonResourceRule
	)
	for _, r := range ix.RulesFor(id.UserInfo(), namespace) {
		if len(r.NonResourceURLs) > 0 {
			nonRes = append(nonRes, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		res = append(res, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return res, nonRes, ix.Missing()
}

// EscalationGuard is the admission check of Kubernetes' RBAC registry: a
// Role, ClusterRole or binding written through the API may grant only
// what its author holds, unless the author may escalate or bind (see
// rbac.Index.CheckWrite).
func (p *Policy) EscalationGuard(_ context.Context, a Attributes, id *Identity) error {
	if a.Kind == nil || a.Kind.GVK.Group != api.RBACGroup || (a.Verb != VerbCreate && a.Verb != VerbUpdate && a.Verb != VerbPatch) || a.Object == nil {
		return nil
	}
	if id == nil || id.Privileged() {
		return nil
	}
	ix, err := p.rbac.Index()
	if err != nil {
		return fmt.Errorf("authorize: %w", err)
	}
	if err := ix.CheckWrite(id.UserInfo(), a.Object, a.Old); err != nil {
		msg := strings.TrimPrefix(err.Error(), rbac.ErrEscalation.Error()+": ")
		return apierrors.NewForbidden(a.Kind.GroupResource(), a.Object.GetName(), errors.New(msg))
	}
	return nil
}

func isRead(verb string) bool {
	return verb == VerbGet || verb == VerbList || verb == VerbWatch
}

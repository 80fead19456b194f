package apiserver

import (
	"context"
	"errors"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/berth-dev/berth/api"
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

// Policy is berth's fixed authorization policy (SPEC §5): the admin may do
// everything, a node what running its pods needs, a service account reads
// in its own namespace, and any other user (which only impersonation
// makes) nothing. Kubernetes' default roles map onto these identities:
// pods/eviction is the admin's (cluster-admin, kubectl drain), and a
// node's for the pods bound to it (system:node with NodeRestriction);
// service accounts, which Kubernetes grants no eviction by default, may
// not evict, nor write a PodDisruptionBudget or its status. It reads the store to learn which objects a node's
// pods reference, in the manner of Kubernetes' node authorizer.
type Policy struct {
	store *store.Store
}

// NewAuthorizer makes the API server's authorizer over the store it serves.
func NewAuthorizer(st *store.Store) *Policy { return &Policy{store: st} }

// Authorize implements Authorizer. Every refusal is a *ForbiddenError.
func (p *Policy) Authorize(ctx context.Context, id *Identity, a Attributes) error {
	if id == nil {
		return Forbidden(id, a, "no identity")
	}
	switch id.Kind {
	case IdentityAdmin:
		return nil
	case IdentityServiceAccount:
		return authorizeServiceAccount(id, a)
	case IdentityNode:
		if a.Kind == nil {
			return Forbidden(id, a, "")
		}
		return p.authorizeNode(id, a)
	case IdentityUser:
		return Forbidden(id, a, "")
	}
	return Forbidden(id, a, "unknown identity kind")
}

// authorizeServiceAccount lets a service account read the namespaced
// objects of its own namespace and nothing else. Reading is not proxying:
// a GET through pods/proxy or services/proxy reaches whatever the pod
// serves (an admin page, a write behind a GET), and Kubernetes' view
// role, which is what a namespace reader holds there, leaves both proxy
// subresources out; so does berth. The view role leaves exec, attach and
// portforward out too, whatever the verb: a real request to them is
// authorized as create, and an access review that asks with get must
// not answer yes either.
func authorizeServiceAccount(id *Identity, a Attributes) error {
	switch {
	case a.Kind == nil:
		return Forbidden(id, a, "")
	case a.Subresource == SubresourceProxy:
		return Forbidden(id, a, "service accounts may read, not proxy to pods or services")
	case connectSubresources[a.Subresource]:
		return Forbidden(id, a, "service accounts may read, not exec, attach or port-forward")
	case !isRead(a.Verb):
		return Forbidden(id, a, "service accounts may only read")
	case !a.Kind.Namespaced || a.Namespace == "" || a.Namespace != id.Namespace:
		return Forbidden(id, a, fmt.Sprintf("service accounts may only read in their own namespace %q", id.Namespace))
	}
	return nil
}

// RulesFor implements RulesLister: a service account's reads in its own
// namespace. A node's rules depend on the objects its pods reference, as
// in Kubernetes' node authorizer, which does not list them either.
func (p *Policy) RulesFor(id *Identity, namespace string) ([]authorizationv1.ResourceRule, string) {
	switch id.Kind {
	case IdentityServiceAccount:
		if namespace != id.Namespace {
			return nil, ""
		}
		return []authorizationv1.ResourceRule{{Verbs: []string{VerbGet, VerbList, VerbWatch}, APIGroups: []string{"*"}, Resources: []string{"*"}}}, ""
	case IdentityNode:
		return nil, "a node's permissions are decided object by object (its Node and Lease, the pods bound to it and what they reference) and cannot be listed as rules"
	}
	return nil, ""
}

func isRead(verb string) bool {
	return verb == VerbGet || verb == VerbList || verb == VerbWatch
}

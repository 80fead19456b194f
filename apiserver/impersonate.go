package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Headers of Kubernetes' impersonation, which kubectl --as and --as-group
// send.
const (
	headerImpersonateUser  = "Impersonate-User"
	headerImpersonateGroup = "Impersonate-Group"
	headerImpersonateUID   = "Impersonate-Uid"
	prefixImpersonateExtra = "Impersonate-Extra-"
)

// impersonate applies kubectl --as: the admin may act as another user, to
// see what that user may do. "system:serviceaccount:NS:NAME" is that
// service account and "system:node:NAME" that node, each with berth's
// policy for its kind; "admin" is the admin; any other name is a user
// berth's policy grants nothing beyond what every caller has, as
// Kubernetes grants an unknown user nothing but its basic rights. Only the
// admin may impersonate, and only a user name: berth has no groups to act
// in, so --as-group, a UID or extra fields are refused rather than
// ignored. A request that asks for none is id's own.
func impersonate(id *Identity, h http.Header) (*Identity, error) {
	user := h.Get(headerImpersonateUser)
	other := len(h.Values(headerImpersonateGroup)) > 0 || len(h.Values(headerImpersonateUID)) > 0
	for k := range h {
		// The server has put every key in canonical form.
		if strings.HasPrefix(k, prefixImpersonateExtra) {
			other = true
		}
	}
	switch {
	case user == "" && !other:
		return id, nil
	case user == "":
		return nil, apierrors.NewBadRequest("impersonating groups, a UID or extra fields needs a user to impersonate")
	case id == nil || id.Kind != IdentityAdmin:
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, user,
			fmt.Errorf("User %q cannot impersonate resource \"users\" in API group \"\" at the cluster scope", id.String()))
	case other:
		return nil, apierrors.NewBadRequest("berth impersonates a user name alone (kubectl --as), not groups (--as-group), a UID or extra fields")
	}
	if strings.HasPrefix(user, ServiceAccountUserPrefix) {
		ns, name, ok := splitServiceAccountUserName(user)
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot impersonate %q: a service account is system:serviceaccount:NAMESPACE:NAME", user))
		}
		return ServiceAccountIdentity(ns, name), nil
	}
	if node, ok := strings.CutPrefix(user, NodeUserPrefix); ok {
		if node == "" || strings.Contains(node, ":") {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot impersonate %q: a node is system:node:NAME", user))
		}
		return NodeIdentity(node), nil
	}
	if user == AdminIdentity().Name {
		return id, nil
	}
	return &Identity{Name: user, Kind: IdentityUser}, nil
}

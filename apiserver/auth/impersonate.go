package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
)

// Headers of Kubernetes' impersonation, which kubectl --as and --as-group
// send.
const (
	headerImpersonateUser  = "Impersonate-User"
	headerImpersonateGroup = "Impersonate-Group"
	headerImpersonateUID   = "Impersonate-Uid"
	prefixImpersonateExtra = "Impersonate-Extra-"
)

// The resources impersonation is authorized on, as Kubernetes names them:
// the "impersonate" verb on users, groups, uids and userextras/KEY, and
// on serviceaccounts in the account's namespace.
var (
	impersonateUsers      = &api.Kind{GVK: schema.GroupVersionKind{Version: "v1", Kind: "User"}, Resource: "users"}
	impersonateGroups     = &api.Kind{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Group"}, Resource: "groups"}
	impersonateUIDs       = &api.Kind{GVK: schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "UID"}, Resource: "uids"}
	impersonateUserExtras = &api.Kind{GVK: schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "UserExtra"}, Resource: "userextras"}
	impersonateSAs        = api.KindOf(&api.ServiceAccount{})
)

// VerbImpersonate is the verb impersonation is authorized with.
const VerbImpersonate = "impersonate"

// Impersonate applies kubectl --as and --as-group as Kubernetes does: the
// caller needs the impersonate verb on the user (or the service account)
// and on each group, UID and extra it asks for; the admin has it on all.
// The new identity is the user with exactly the groups asked for, and
// system:authenticated; a service account or a node asked for without
// groups gets its own. A request that asks for none is id's own.
func Impersonate(ctx context.Context, authz Authorizer, id *Identity, h http.Header) (*Identity, error) {
	name := h.Get(headerImpersonateUser)
	groups := h.Values(headerImpersonateGroup)
	uids := h.Values(headerImpersonateUID)
	var extras []string
	for k := range h {
		// The server has put every key in canonical form.
		if key, ok := strings.CutPrefix(k, prefixImpersonateExtra); ok {
			extras = append(extras, strings.ToLower(key))
		}
	}
	switch {
	case name == "" && len(groups) == 0 && len(uids) == 0 && len(extras) == 0:
		return id, nil
	case name == "":
		return nil, apierrors.NewBadRequest("impersonating groups, a UID or extra fields needs a user to impersonate")
	}
	check := func(k *api.Kind, namespace, n, sub string) error {
		a := Attributes{Verb: VerbImpersonate, Kind: k, Namespace: namespace, Name: n, Subresource: sub}
		if err := authz.Authorize(ctx, id, a); err != nil {
			var fe *ForbiddenError
			if errors.As(err, &fe) {
				return ForbiddenStatus(fe)
			}
			return err
		}
		return nil
	}
	ns, sa, isSA := SplitServiceAccountUserName(name)
	if strings.HasPrefix(name, ServiceAccountUserPrefix) && !isSA {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot impersonate %q: a service account is system:serviceaccount:NAMESPACE:NAME", name))
	}
	node, isNode := strings.CutPrefix(name, NodeUserPrefix)
	if isNode && (node == "" || strings.Contains(node, ":")) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot impersonate %q: a node is system:node:NAME", name))
	}
	var err error
	if isSA {
		err = check(impersonateSAs, ns, sa, "")
	} else {
		err = check(impersonateUsers, "", name, "")
	}
	for _, g := range groups {
		if err == nil {
			err = check(impersonateGroups, "", g, "")
		}
	}
	for _, u := range uids {
		if err == nil {
			err = check(impersonateUIDs, "", u, "")
		}
	}
	for _, e := range extras {
		if err == nil {
			err = check(impersonateUserExtras, "", "", e)
		}
	}
	if err != nil {
		return nil, err
	}
	switch {
	case isSA && len(groups) == 0:
		return ServiceAccountIdentity(ns, sa), nil
	case isNode && (len(groups) == 0 || (len(groups) == 1 && groups[0] == GroupNodes)):
		return NodeIdentity(node), nil
	case name == AdminIdentity().Name && len(groups) == 0 && id.Kind == IdentityAdmin:
		return id, nil
	}
	out := UserIdentity(name, groups)
	if isSA && out.Kind == IdentityUser {
		out.Kind, out.Namespace = IdentityServiceAccount, ns
	}
	return out, nil
}

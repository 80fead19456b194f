package auth

import (
	"context"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-dev/berth/store"
)

// FuzzImpersonate reads arbitrary impersonation headers: it never panics;
// with no RBAC objects only the admin may impersonate; a refusal is a 400
// or a 403; and what it accepts acts as the user named, of the kind the
// name says, in the groups asked for.
func FuzzImpersonate(f *testing.F) {
	for _, seed := range []string{
		"", "bob", "admin", "system:node:n1", "system:node:", "system:node:a:b", "system:serviceaccount:default:robot",
		"system:serviceaccount:default", "system:serviceaccount::x", "system:serviceaccount:a:b:c", "system:masters",
	} {
		f.Add(seed, "", true)
		f.Add(seed, "system:masters", true)
		f.Add(seed, "dev", true)
		f.Add(seed, "", false)
	}
	st, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	authz := NewAuthorizer(st)
	admin := AdminIdentity()
	node := NodeIdentity("n1")
	f.Fuzz(func(t *testing.T, user, group string, asAdmin bool) {
		id := node
		if asAdmin {
			id = admin
		}
		h := http.Header{}
		if user != "" {
			h.Set(headerImpersonateUser, user)
		}
		if group != "" {
			h.Set(headerImpersonateGroup, group)
		}
		got, err := Impersonate(context.Background(), authz, id, h)
		if err != nil {
			if !apierrors.IsBadRequest(err) && !apierrors.IsForbidden(err) {
				t.Fatalf("%q/%q: %v is neither 400 nor 403", user, group, err)
			}
			return
		}
		if user == "" && group == "" {
			if got != id {
				t.Fatalf("no impersonation changed the identity to %+v", got)
			}
			return
		}
		if !asAdmin {
			t.Fatalf("%q/%q accepted for %s", user, group, id.Name)
		}
		if got.Name != user {
			t.Fatalf("%q: acting as %q", user, got.Name)
		}
		switch {
		case group == GroupMasters:
			if got.Kind != IdentityAdmin {
				t.Fatalf("%q in system:masters: %+v", user, got)
			}
		case strings.HasPrefix(user, "system:serviceaccount:"):
			if got.Kind != IdentityServiceAccount || got.Namespace == "" || !strings.HasPrefix(user, "system:serviceaccount:"+got.Namespace+":") {
				t.Fatalf("%q: %+v", user, got)
			}
		case strings.HasPrefix(user, "system:node:") && group == "":
			if got.Kind != IdentityNode || "system:node:"+got.Node != user {
				t.Fatalf("%q: %+v", user, got)
			}
		case user == "admin" && group == "":
			if got.Kind != IdentityAdmin {
				t.Fatalf("%q: %+v", user, got)
			}
		default:
			if got.Kind != IdentityUser {
				t.Fatalf("%q: %+v", user, got)
			}
		}
		if group != "" && !strings.Contains(strings.Join(got.Groups, "\n"), group) {
			t.Fatalf("%q/%q: groups %v", user, group, got.Groups)
		}
	})
}

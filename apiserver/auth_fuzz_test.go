package apiserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/berth-dev/berth/apiserver/auth"
)

// FuzzAuthenticate feeds arbitrary bearer tokens to the authenticator over
// a real store: it must never panic, and must either name an identity or
// refuse with ErrUnauthenticated, never both or neither.
func FuzzAuthenticate(f *testing.F) {
	s := newAuthTestSetup(f)
	cred, err := s.signer.IssueNodeCredential("n1")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{s.token, cred, authTestAdminToken, "", "a.b.c", s.token[:len(s.token)/2]} {
		f.Add(seed)
	}
	parts := strings.Split(s.token, ".")
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(parts[0] + ".e30." + parts[2])

	f.Fuzz(func(t *testing.T, token string) {
		id, err := s.authn.Authenticate(context.Background(), token)
		switch {
		case err == nil && id == nil:
			t.Fatalf("%q: no identity and no error", token)
		case err != nil && id != nil:
			t.Fatalf("%q: identity %+v and error %v", token, id, err)
		case err != nil && !errors.Is(err, auth.ErrUnauthenticated):
			t.Fatalf("%q: error %v is not ErrUnauthenticated", token, err)
		case id != nil && id.Kind == auth.IdentityAdmin && token != authTestAdminToken:
			t.Fatalf("%q passed for the admin token", token)
		}
	})
}

package auth_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/berth-dev/berth/apiserver/auth"
)

// FuzzReadTokenFile reads arbitrary token files: it never panics, an
// error names the file, and every user it accepts is authenticated and
// in its groups and system:authenticated.
func FuzzReadTokenFile(f *testing.F) {
	for _, seed := range []string{
		"t1,alice,1\n",
		"# comment\nt2,bob,2,\"qa,auditors\"\n t3 , carol , 3 , \"system:masters\"\n",
		"t1,a,1\nt1,b,2\n",
		"t,,1\n",
		"only,two\n",
		"\"unterminated,x,1\n",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		users, err := auth.ReadTokenFile("tokens.csv", strings.NewReader(data))
		if err != nil {
			if !strings.Contains(err.Error(), "tokens.csv") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		for _, id := range users {
			if id.Name == "" || !slices.Contains(id.Groups, auth.GroupAuthenticated) {
				t.Fatalf("user %+v", id)
			}
			if slices.Contains(id.Groups, auth.GroupMasters) != (id.Kind == auth.IdentityAdmin) {
				t.Fatalf("system:masters and the admin kind disagree: %+v", id)
			}
		}
	})
}

// TestReadTokenFile: kube-apiserver's format, groups quoted, errors by
// line.
func TestReadTokenFile(t *testing.T) {
	users, err := auth.ReadTokenFile("f", strings.NewReader("# x\nt1,alice,1\nt2,bob,2,\"qa, auditors\"\n"))
	if err != nil || len(users) != 2 {
		t.Fatalf("%v %v", users, err)
	}
	for _, id := range users {
		if id.Name == "bob" && !slices.Equal(id.Groups, []string{"qa", "auditors", auth.GroupAuthenticated}) {
			t.Errorf("bob: %+v", id)
		}
	}
	if _, err := auth.ReadTokenFile("f", strings.NewReader("t1,a,1\nt1,b,2\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a token twice: %v", err)
	}
}

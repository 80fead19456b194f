package apiserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// TestImpersonation: kubectl --as lets the admin act as a service
// account, a node or another user, with berth's policy for each; no one
// else may, and groups, UIDs and extras are refused rather than ignored.
func TestImpersonation(t *testing.T) {
	e := newEnv(t, withRealAuth())
	e.mustCreate(testPod("default", "web", "n1", nil))
	e.mustCreate(testPod("default", "other", "n2", nil))
	e.mustCreate(&api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "robot"}})
	grantView(t, e.store, "default", "robot")
	n1, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	as := func(token string, headers map[string][]string, method, path string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader("{}")
		}
		code, _, data := e.doWith(method, path, token, headers, body)
		return code, string(data)
	}
	user := func(name string) map[string][]string { return map[string][]string{"Impersonate-User": {name}} }
	for _, c := range []struct {
		token   string
		headers map[string][]string
		method  string
		path    string
		code    int
		want    string
	}{
		// The admin as a service account: reads in its namespace only.
		{adminToken, user("system:serviceaccount:default:robot"), "GET", "/api/v1/namespaces/default/pods", 200, ""},
		{adminToken, user("system:serviceaccount:default:robot"), "DELETE", "/api/v1/namespaces/default/pods/web", 403, `User \"system:serviceaccount:default:robot\" cannot delete`},
		{adminToken, user("system:serviceaccount:default:robot"), "GET", "/api/v1/nodes", 403, "system:serviceaccount:default:robot"},
		// As a node: its own pods, not another's.
		{adminToken, user("system:node:n1"), "GET", "/api/v1/namespaces/default/pods/web", 200, ""},
		{adminToken, user("system:node:n1"), "GET", "/api/v1/namespaces/default/pods/other", 403, `User \"system:node:n1\"`},
		// As someone berth does not know: nothing.
		{adminToken, user("bob"), "GET", "/api/v1/namespaces/default/pods", 403, `User \"bob\" cannot list`},
		{adminToken, user("admin"), "DELETE", "/api/v1/namespaces/default/pods/other", 200, ""},
		// Refusals.
		{n1, user("system:node:n2"), "GET", "/api/v1/namespaces/default/pods/other", 403, `cannot impersonate resource \"users\"`},
		// Groups: the user acts with those it is given.
		{adminToken, map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}}, "GET", "/api/v1/namespaces", 200, ""},
		{adminToken, map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:serviceaccounts:default"}}, "GET", "/api/v1/namespaces", 403, `User \"bob\" cannot list`},
		{adminToken, map[string][]string{"Impersonate-Group": {"system:masters"}}, "GET", "/api/v1/namespaces", 400, "needs a user"},
		{adminToken, map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Extra-Scopes": {"view"}}, "GET", "/api/v1/namespaces", 403, `User \"bob\" cannot list`},
		// Who may impersonate nothing is refused before anything else.
		{n1, map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}}, "GET", "/api/v1/namespaces", 403, `cannot impersonate resource \"users\"`},
		{adminToken, user("system:serviceaccount:default"), "GET", "/api/v1/namespaces", 400, "system:serviceaccount:NAMESPACE:NAME"},
		{adminToken, user("system:node:"), "GET", "/api/v1/namespaces", 400, "system:node:NAME"},
	} {
		code, body := as(c.token, c.headers, c.method, c.path)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s %s as %v: %d %s, want %d with %q", c.method, c.path, c.headers, code, body, c.code, c.want)
		}
	}
	// whoami says who the request acted as.
	if code, body := as(adminToken, user("system:serviceaccount:default:robot"), "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews"); code != http.StatusCreated || !strings.Contains(body, "system:serviceaccount:default:robot") {
		t.Errorf("whoami as the robot: %d %s", code, body)
	}
}

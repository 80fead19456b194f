package apiserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-dev/berth/api"
)

// TestSelfSubjectAccessReview: kubectl auth can-i gets the answer the
// authorizer would give the caller, whether it asks in JSON or protobuf.
func TestSelfSubjectAccessReview(t *testing.T) {
	e := newEnv(t, withRealAuth())
	e.mustCreate(testPod("default", "web", "n1", nil))
	e.mustCreate(testPod("default", "other", "n2", nil))
	n1, sa := reviewCallers(t, e)
	ask := func(token string, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, pb bool) authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		var out authorizationv1.SelfSubjectAccessReview
		postReview(t, e, token, "selfsubjectaccessreviews", "SelfSubjectAccessReview", &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra, NonResourceAttributes: nra},
		}, &out, pb)
		return out.Status
	}
	for _, c := range []struct {
		who   string
		token string
		ra    authorizationv1.ResourceAttributes
		want  bool
	}{
		{"admin", adminToken, authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes"}, true},
		{"admin", adminToken, authorizationv1.ResourceAttributes{Verb: "*", Resource: "*", Group: "*"}, true},
		{"admin", adminToken, authorizationv1.ResourceAttributes{Verb: "create", Group: "batch", Resource: "jobs"}, true},
		{"service account", sa, authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "default"}, true},
		{"service account", sa, authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "kube-system"}, false},
		{"service account", sa, authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: "default"}, false},
		{"service account", sa, authorizationv1.ResourceAttributes{Verb: "get", Group: "apps", Resource: "deployments", Namespace: "default"}, true},
		{"node", n1, authorizationv1.ResourceAttributes{Verb: "update", Resource: "pods", Subresource: "status", Namespace: "default", Name: "web"}, true},
		{"node", n1, authorizationv1.ResourceAttributes{Verb: "update", Resource: "pods", Subresource: "status", Namespace: "default", Name: "other"}, false},
		{"node", n1, authorizationv1.ResourceAttributes{Verb: "delete", Resource: "namespaces", Name: "default"}, false},
		// Metrics are read as the objects they describe.
		{"service account", sa, authorizationv1.ResourceAttributes{Verb: "list", Group: "metrics.k8s.io", Resource: "pods", Namespace: "default"}, true},
		{"service account", sa, authorizationv1.ResourceAttributes{Verb: "list", Group: "metrics.k8s.io", Resource: "nodes"}, false},
		{"service account", sa, authorizationv1.ResourceAttributes{Verb: "list", Group: "metrics.k8s.io", Resource: "secrets", Namespace: "default"}, false},
	} {
		for _, pb := range []bool{false, true} {
			st := ask(c.token, &c.ra, nil, pb)
			if st.Allowed != c.want || st.Denied == c.want {
				t.Errorf("%s may %+v (protobuf %v): %+v, want allowed %v", c.who, c.ra, pb, st, c.want)
			}
			if !st.Allowed && st.Reason == "" {
				t.Errorf("%s may not %+v, but no reason is given", c.who, c.ra)
			}
		}
	}
	if st := ask(sa, nil, &authorizationv1.NonResourceAttributes{Path: "/version", Verb: "get"}, false); !st.Allowed {
		t.Errorf("/version for a service account: %+v", st)
	}
	// system:discovery opens the API's documents to every user, as in
	// Kubernetes; nothing opens a path no role names.
	if st := ask(sa, nil, &authorizationv1.NonResourceAttributes{Path: "/openapi/v3", Verb: "get"}, false); !st.Allowed {
		t.Errorf("/openapi/v3 for a service account: %+v", st)
	}
	if st := ask(sa, nil, &authorizationv1.NonResourceAttributes{Path: "/debug/pprof/", Verb: "get"}, false); st.Allowed {
		t.Errorf("/debug/pprof/ for a service account: %+v", st)
	}
	code, _, data := e.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "", "application/json", "", strings.NewReader(`{}`))
	status(t, code, data, http.StatusUnauthorized)
	code, _, data = e.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", adminToken, "application/vnd.kubernetes.protobuf", "", strings.NewReader("k8s\x00\x0a\xff"))
	status(t, code, data, http.StatusBadRequest)
}

// TestSelfSubjectReview: kubectl auth whoami learns its user and groups.
func TestSelfSubjectReview(t *testing.T) {
	e := newEnv(t, withRealAuth())
	n1, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	body := protobufBody(t, &authenticationv1.SelfSubjectReview{}, "authentication.k8s.io/v1", "SelfSubjectReview")
	code, _, data := e.do("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", n1, "application/vnd.kubernetes.protobuf", "", bytes.NewReader(body))
	var out authenticationv1.SelfSubjectReview
	if err := json.Unmarshal(data, &out); err != nil || code != http.StatusCreated {
		t.Fatalf("whoami: %d %s", code, data)
	}
	if u := out.Status.UserInfo; u.Username != "system:node:n1" || len(u.Groups) == 0 || u.Groups[0] != "system:nodes" {
		t.Errorf("whoami: %+v", u)
	}
}

// TestSelfSubjectRulesReview: kubectl auth can-i --list gets the admin's
// wildcard, a service account's reads in its own namespace (and only the
// reviews elsewhere), and a node's rules marked incomplete, with why;
// everyone has the reviews about themselves and the open paths.
func TestSelfSubjectRulesReview(t *testing.T) {
	e := newEnv(t, withRealAuth())
	n1, sa := reviewCallers(t, e)
	ask := func(token, ns string, pb bool) authorizationv1.SubjectRulesReviewStatus {
		t.Helper()
		var out authorizationv1.SelfSubjectRulesReview
		postReview(t, e, token, "selfsubjectrulesreviews", "SelfSubjectRulesReview", &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns},
		}, &out, pb)
		return out.Status
	}
	has := func(st authorizationv1.SubjectRulesReviewStatus, verbs, resource string) bool {
		for _, r := range st.ResourceRules {
			if strings.Join(r.Verbs, ",") == verbs && slices.Contains(r.Resources, resource) {
				return true
			}
		}
		return false
	}
	for _, pb := range []bool{false, true} {
		st := ask(adminToken, "default", pb)
		if !has(st, "*", "*") || st.Incomplete || len(st.NonResourceRules) != 1 || st.NonResourceRules[0].NonResourceURLs[0] != "*" {
			t.Errorf("admin (protobuf %v): %+v", pb, st)
		}
		st = ask(sa, "default", pb)
		if !has(st, "get,list,watch", "pods") || !has(st, "create", "selfsubjectrulesreviews") || st.Incomplete {
			t.Errorf("service account in its namespace (protobuf %v): %+v", pb, st)
		}
		st = ask(sa, "kube-system", pb)
		if has(st, "get,list,watch", "pods") || !has(st, "create", "selfsubjectaccessreviews") || len(st.NonResourceRules) == 0 {
			t.Errorf("service account elsewhere (protobuf %v): %+v", pb, st)
		}
		st = ask(n1, "default", pb)
		if !st.Incomplete || !strings.Contains(st.EvaluationError, "object by object") {
			t.Errorf("node (protobuf %v): %+v", pb, st)
		}
	}
}

// postReview posts an authorization.k8s.io review, as JSON or protobuf,
// and decodes the answer into out, which must be a 201 of the same kind.
func postReview(t *testing.T, e *env, token, resource, kind string, review interface {
	runtime.Object
	Marshal() ([]byte, error)
}, out any, pb bool) {
	t.Helper()
	var body []byte
	ct := "application/json"
	if pb {
		body, ct = protobufBody(t, review, "authorization.k8s.io/v1", kind), "application/vnd.kubernetes.protobuf"
	} else {
		body, _ = json.Marshal(review)
	}
	code, _, data := e.do("POST", "/apis/authorization.k8s.io/v1/"+resource, token, ct, "", bytes.NewReader(body))
	var meta metav1.TypeMeta
	if err := json.Unmarshal(data, &meta); err != nil || code != http.StatusCreated || meta.Kind != kind {
		t.Fatalf("review: %d %s", code, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
}

// reviewCallers are the credentials of node n1 and of service account
// default/robot, which it creates.
func reviewCallers(t *testing.T, e *env) (node, serviceAccount string) {
	t.Helper()
	node, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	robot := e.mustCreate(&api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "robot"}}).(*api.ServiceAccount)
	grantView(t, e.store, "default", "robot")
	if serviceAccount, err = e.signer.IssueServiceAccountToken(robot, nil, 0); err != nil {
		t.Fatal(err)
	}
	return node, serviceAccount
}

// HandlePublic takes paths: the reviews match paths exactly, so a subtree
// or a method pattern would be listed as something it is not.
func TestHandlePublicTakesPaths(t *testing.T) {
	e := newEnv(t)
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, p := range []string{"/subtree/", "GET /x", "x", "/x/{name}"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("HandlePublic(%q) took a pattern", p)
				}
			}()
			e.server.HandlePublic(p, ok)
		}()
	}
	e.server.HandlePublic("/x", ok)
}

// TestLocalSubjectAccessReview: a review of one namespace answers as a
// SubjectAccessReview does, in JSON and protobuf, refuses another
// namespace and paths, and needs the right to create it there.
func TestLocalSubjectAccessReview(t *testing.T) {
	e := newEnv(t, withRealAuth())
	_, sa := reviewCallers(t, e)
	const robot = "system:serviceaccount:default:robot"
	ask := func(ra authorizationv1.ResourceAttributes, pb bool) authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		var out authorizationv1.LocalSubjectAccessReview
		postReview(t, e, adminToken, "namespaces/default/localsubjectaccessreviews", "LocalSubjectAccessReview", &authorizationv1.LocalSubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
			Spec:       authorizationv1.SubjectAccessReviewSpec{User: robot, ResourceAttributes: &ra},
		}, &out, pb)
		return out.Status
	}
	for _, pb := range []bool{false, true} {
		if st := ask(authorizationv1.ResourceAttributes{Namespace: "default", Verb: "list", Resource: "pods"}, pb); !st.Allowed {
			t.Errorf("robot may list pods in default (protobuf %v): %+v", pb, st)
		}
		if st := ask(authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Resource: "configmaps"}, pb); st.Allowed || st.Reason == "" {
			t.Errorf("robot may not create configmaps (protobuf %v): %+v", pb, st)
		}
	}
	for _, c := range []struct {
		name, token, body string
		code              int
		want              string
	}{
		{"another namespace", adminToken, `{"spec":{"user":"u","resourceAttributes":{"namespace":"other","verb":"get","resource":"pods"}}}`, http.StatusUnprocessableEntity, "spec.resourceAttributes.namespace"},
		{"metadata of another namespace", adminToken, `{"metadata":{"namespace":"other"},"spec":{"user":"u","resourceAttributes":{"namespace":"other","verb":"get","resource":"pods"}}}`, http.StatusBadRequest, "must match namespace"},
		{"a path", adminToken, `{"spec":{"user":"u","nonResourceAttributes":{"path":"/healthz","verb":"get"}}}`, http.StatusUnprocessableEntity, "spec.nonResourceAttributes"},
		{"no subject", adminToken, `{"spec":{"resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}}`, http.StatusUnprocessableEntity, "spec.user"},
		{"a caller without the right", sa, `{"spec":{"user":"u","resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}}`, http.StatusForbidden, "localsubjectaccessreviews"},
	} {
		code, _, data := e.do("POST", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", c.token, "application/json", "", strings.NewReader(c.body))
		if code != c.code || !strings.Contains(string(data), c.want) {
			t.Errorf("%s: %d %s, want %d naming %q", c.name, code, data, c.code, c.want)
		}
	}
}

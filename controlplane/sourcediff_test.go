package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/reconcile/apply"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
)

// diffAuth: "admin" may do anything; "viewer" may get sources and
// sources/diff, and nothing else.
type diffAuth struct{}

func (diffAuth) Authenticate(_ context.Context, token string) (*auth.Identity, error) {
	switch token {
	case "admin":
		return &auth.Identity{Name: "admin", Kind: auth.IdentityAdmin}, nil
	case "viewer":
		return &auth.Identity{Name: "viewer", Kind: auth.IdentityServiceAccount, Namespace: "default"}, nil
	}
	return nil, fmt.Errorf("%w: unknown token", auth.ErrUnauthenticated)
}

func (diffAuth) Authorize(_ context.Context, id *auth.Identity, a auth.Attributes) error {
	if id.Kind == auth.IdentityAdmin || a.Kind != nil && a.Kind.Resource == "sources" && a.Verb == auth.VerbGet {
		return nil
	}
	return errors.New("not allowed")
}

// diffEnv is an API server serving sources/diff of a source "site" that
// applied a ConfigMap and a Secret, both since changed outside it; get
// asks it as a token.
func diffEnv(t testing.TB) (*store.Store, func(t testing.TB, token, path string) (int, http.Header, string)) {
	ctx := context.Background()
	st, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	log := slog.New(slog.DiscardHandler)
	srcs, err := newSources(nil, st, t.TempDir(), clock.RealClock{}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []api.Object{
		&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&api.Source{ObjectMeta: metav1.ObjectMeta{Name: "site"}, Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: "/nowhere"}},
		&api.Source{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: "/elsewhere"}},
		&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "theirs", Annotations: map[string]string{api.AnnotationSource: "other"}}},
	} {
		if _, err := st.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	manifests := strings.Replace(cm("settings", "from-git"), "name: settings", "name: settings\n  namespace: default", 1) + "---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: default\nstringData:\n  password: from-git\n"
	objs, errs := api.DecodeStream("site.yaml", []byte(manifests), api.DecodeOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, err := srcs.applier.Apply(ctx, "site", source.Revision{ID: "r1", Objects: objs}, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	// Changes made outside the source, no drift controller to revert them.
	obj, _ := st.Get(api.KindOf(&api.ConfigMap{}), "default", "settings")
	live := obj.DeepCopyObject().(*api.ConfigMap)
	live.Data["key"] = "changed-live"
	live.Labels = map[string]string{"added": "outside"}
	if _, err := st.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	obj, _ = st.Get(api.KindOf(&api.Secret{}), "default", "db")
	sec := obj.DeepCopyObject().(*api.Secret)
	sec.Data["password"] = []byte("changed-live")
	if _, err := st.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}

	a, err := apiserver.New(apiserver.Config{Store: st, Authenticator: diffAuth{}, Authorizer: diffAuth{}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	a.HandleSubresource(api.KindOf(&api.Source{}), SubresourceDiff, srcs.serveDiff(diffAuth{}))
	ts := httptest.NewTLSServer(a.Handler())
	t.Cleanup(ts.Close)
	return st, func(t testing.TB, token, path string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, ts.URL+"/apis/berth.dev/v1/sources/"+path, nil)
		if err != nil {
			t.Skipf("not a URL: %v", err) // the fuzzer's, not one a client sends
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body)
	}
}

// sources/diff shows one object live against what its source's last
// applied revision declares, to whoever may get the object, and hides a
// Secret's values.
func TestSourceDiffShowsLiveAgainstTheAppliedRevision(t *testing.T) {
	ctx := context.Background()
	st, get := diffEnv(t)
	code, h, body := get(t, "admin", "site/diff?resource=configmaps&namespace=default&name=settings")
	if code != http.StatusOK || h.Get("Berth-Revision") != "r1" {
		t.Fatalf("diff: %d, revision %q\n%s", code, h.Get("Berth-Revision"), body)
	}
	for _, want := range []string{"--- live/configmaps/default/settings", "+++ source@r1/configmaps/default/settings", `-  key: changed-live`, `+  key: from-git`} {
		if !strings.Contains(body, want) {
			t.Errorf("diff lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "-    added: outside") || strings.Contains(body, "resourceVersion") {
		t.Errorf("the diff shows a label the source does not declare, or server fields:\n%s", body)
	}
	code, _, body = get(t, "admin", "site/diff?resource=secrets&namespace=default&name=db")
	if code != http.StatusOK || strings.Contains(body, "from-git") || strings.Contains(body, "changed-live") ||
		strings.Contains(body, "ZnJvbS1naXQ") || !strings.Contains(body, "(hidden: 8 bytes, sha256 ") {
		t.Errorf("secret diff: %d\n%s", code, body)
	}
	for _, c := range []struct {
		token, path string
		code        int
		msg         string
	}{
		{"viewer", "site/diff?resource=configmaps&namespace=default&name=settings", http.StatusForbidden, "not allowed"},
		{"admin", "site/diff?resource=nosuch&namespace=default&name=settings", http.StatusBadRequest, "nosuch"},
		{"admin", "site/diff?resource=configmaps&namespace=default", http.StatusBadRequest, "name"},
		{"admin", "site/diff?resource=configmaps&name=settings", http.StatusBadRequest, "namespaced"},
		{"admin", "site/diff?resource=configmaps&namespace=default&name=theirs", http.StatusNotFound, "did not apply it"},
		{"admin", "site/diff?resource=configmaps&namespace=default&name=never", http.StatusNotFound, "applied no such object"},
		{"admin", "missing/diff?resource=configmaps&namespace=default&name=settings", http.StatusNotFound, "not found"},
	} {
		if code, _, body := get(t, c.token, c.path); code != c.code || !strings.Contains(body, c.msg) {
			t.Errorf("%s as %s: %d %s, want %d with %q", c.path, c.token, code, body, c.code, c.msg)
		}
	}
	// Deleted outside the source: the diff is the whole object, added.
	if _, err := st.Delete(ctx, api.KindOf(&api.ConfigMap{}), "default", "settings", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, _, body := get(t, "admin", "site/diff?resource=configmaps&namespace=default&name=settings"); code != http.StatusOK || !strings.Contains(body, "+  key: from-git") {
		t.Errorf("diff of a deleted object: %d\n%s", code, body)
	}
}

// FuzzSourceDiffQuery: any query gets an answer with a code, never a
// panic, and a diff only of an object the source applied.
func FuzzSourceDiffQuery(f *testing.F) {
	for _, q := range []string{"resource=configmaps&namespace=default&name=settings", "resource=secrets&namespace=default&name=db",
		"resource=configmaps&namespace=default&name=theirs", "resource=nodes&name=x", "resource=configmaps&namespace=%00&name=..", "", "resource=pods/log&name=a"} {
		f.Add(q)
	}
	_, get := diffEnv(f)
	f.Fuzz(func(t *testing.T, q string) {
		code, _, body := get(t, "admin", "site/diff?"+q)
		switch code {
		case http.StatusOK:
			if body != "" && !strings.Contains(body, "--- live/") {
				t.Fatalf("%q: 200 with %q", q, body)
			}
		case http.StatusBadRequest, http.StatusNotFound:
		default:
			t.Fatalf("%q: %d %s", q, code, body)
		}
	})
}

package ui_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/testtool"
	"github.com/berth-dev/berth/ui"
)

// hostile is what the escaping tests put wherever a user's text may go.
const hostile = `<script>alert("x")</script>`

const manifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
  annotations:
    note: '` + hostile + `'
data:
  greeting: hello
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
spec:
  selector:
    app: web
  ports:
  - port: 80
`

// cluster is a control plane with a dir source named hello, and the
// admin's client.
type cluster struct {
	cp    *controlplane.Server
	admin *client.Client
	base  string
	dir   string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(manifests), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := source.Parse("name=hello," + dir)
	if err != nil {
		t.Fatal(err)
	}
	cp := cptest.Start(t, controlplane.Config{Sources: []source.Spec{spec}})
	admin, err := client.New(&client.Config{Server: cp.LocalURL(), Token: cp.Credentials().AdminToken, CAData: cp.Credentials().CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{cp: cp, admin: admin, base: cp.LocalURL(), dir: dir}
	testtool.WaitFor(t, 20*time.Second, "source hello ready", func() error {
		obj, err := admin.Get(context.Background(), api.KindOf(&api.Source{}), "", "hello")
		if err != nil {
			return err
		}
		for _, cond := range obj.(*api.Source).Status.Conditions {
			if cond.Type == api.SourceReady && cond.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not ready: %+v", obj.(*api.Source).Status.Conditions)
	})
	return c
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so that tests see them.
type browser struct {
	t    *testing.T
	c    *http.Client
	base string
}

func (c *cluster) browser(t *testing.T) *browser {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.cp.Credentials().CAPEM)
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: c.base, c: &http.Client{
		Jar:           jar,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}}
}

func (b *browser) do(method, path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

var hiddenField = regexp.MustCompile(`name="(csrf|next)" value="([^"]*)"`)

func formValue(t *testing.T, html, name string) string {
	t.Helper()
	for _, m := range hiddenField.FindAllStringSubmatch(html, -1) {
		if m[1] == name {
			return strings.ReplaceAll(m[2], "&amp;", "&")
		}
	}
	t.Fatalf("no %s field in:\n%s", name, html)
	return ""
}

// login logs in with token and returns the CSRF token of the session.
func (b *browser) login(token string) string {
	b.t.Helper()
	_, page := b.do("GET", "/ui/login", nil)
	resp, body := b.do("POST", "/ui/login", url.Values{"token": {token}, "csrf": {formValue(b.t, page, "csrf")}, "next": {"/ui/"}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("login: %s\n%s", resp.Status, body)
	}
	_, page = b.do("GET", "/ui/", nil)
	return formValue(b.t, page, "csrf")
}

func TestWithoutSessionEveryPageRedirectsAndEveryStreamIs401(t *testing.T) {
	c := startCluster(t)
	b := c.browser(t)
	for _, p := range []string{"/ui/", "/ui/sources/hello", "/ui/objects/configmaps/default/settings", "/ui/nodes", "/ui/?q=x"} {
		resp, _ := b.do("GET", p, nil)
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/ui/login?next=") {
			t.Errorf("GET %s: %s to %q, want 303 to the login page", p, resp.Status, resp.Header.Get("Location"))
		}
	}
	for _, p := range []string{"/ui/stream/?rv=1", "/ui/stream/nodes?rv=1", "/ui/logs/default/web"} {
		if resp, _ := b.do("GET", p, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s: %s, want 401", p, resp.Status)
		}
	}
	for _, p := range []string{"/ui/sources/hello/sync", "/ui/sources/hello/suspend", "/ui/sources/hello/resume", "/ui/logout"} {
		resp, _ := b.do("POST", p, url.Values{"csrf": {"x"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
			t.Errorf("POST %s: %s to %q, want 303 to the login page", p, resp.Status, resp.Header.Get("Location"))
		}
	}
	// A made-up session id is no session.
	u, _ := url.Parse(c.base + "/ui/")
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "berth_session", Value: "made-up"}})
	if resp, _ := b.do("GET", "/ui/", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a made-up session: %s, want 303", resp.Status)
	}
}

func TestLogin(t *testing.T) {
	c := startCluster(t)
	b := c.browser(t)
	resp, page := b.do("GET", "/ui/login?next="+url.QueryEscape("/ui/nodes"), nil)
	if resp.StatusCode != http.StatusOK || formValue(t, page, "next") != "/ui/nodes" {
		t.Fatalf("login page: %s\n%s", resp.Status, page)
	}
	csrf := formValue(t, page, "csrf")

	// The login form's own token must come back.
	resp, _ = b.do("POST", "/ui/login", url.Values{"token": {c.cp.Credentials().AdminToken}, "csrf": {"forged"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("login with a forged form token: %s, want 403", resp.Status)
	}
	_, page = b.do("GET", "/ui/login", nil)
	csrf = formValue(t, page, "csrf")
	resp, body := b.do("POST", "/ui/login", url.Values{"token": {"not-a-token"}, "csrf": {csrf}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "does not accept this token") {
		t.Errorf("login with a bad token: %s\n%s", resp.Status, body)
	}
	if got := c.cp.UI().Sessions(); got != 0 {
		t.Errorf("%d sessions after failed logins", got)
	}

	_, page = b.do("GET", "/ui/login", nil)
	csrf = formValue(t, page, "csrf")
	resp, body = b.do("POST", "/ui/login", url.Values{"token": {c.cp.Credentials().AdminToken}, "csrf": {csrf}, "next": {"https://evil.example/"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("login: %s to %q, want 303 to /ui/ (never another site)\n%s", resp.Status, resp.Header.Get("Location"), body)
	}
	var sess *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "berth_session" {
			sess = ck
		}
	}
	if sess == nil {
		t.Fatal("no session cookie")
	}
	if !sess.HttpOnly || !sess.Secure || sess.SameSite != http.SameSiteStrictMode || sess.Path != "/ui/" {
		t.Errorf("session cookie %+v: want HttpOnly, Secure, SameSite=Strict, Path=/ui/", sess)
	}
	if strings.Contains(sess.Value, c.cp.Credentials().AdminToken) || len(sess.Value) < 40 {
		t.Errorf("session cookie %q: want an opaque id, not the token", sess.Value)
	}
	resp, page = b.do("GET", "/ui/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "admin") {
		t.Fatalf("overview after login: %s\n%s", resp.Status, page)
	}
	// Logged in, the login page sends the viewer on.
	if resp, _ := b.do("GET", "/ui/login?next=/ui/nodes", nil); resp.Header.Get("Location") != "/ui/nodes" {
		t.Errorf("login page with a session: to %q, want /ui/nodes", resp.Header.Get("Location"))
	}

	// Logout needs the session's CSRF token.
	if resp, _ := b.do("POST", "/ui/logout", url.Values{"csrf": {"wrong"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("logout without the CSRF token: %s, want 403", resp.Status)
	}
	resp, _ = b.do("POST", "/ui/logout", url.Values{"csrf": {formValue(t, page, "csrf")}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("logout: %s", resp.Status)
	}
	if resp, _ := b.do("GET", "/ui/", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("overview after logout: %s, want 303 to login", resp.Status)
	}
	if got := c.cp.UI().Sessions(); got != 0 {
		t.Errorf("%d sessions after logout", got)
	}
}

// noInlineScript finds a script element without src, which the CSP
// would refuse anyway and no page may carry.
var scriptTag = regexp.MustCompile(`(?i)<script[^>]*>`)

func checkPage(t *testing.T, what, page string) {
	t.Helper()
	for _, tag := range scriptTag.FindAllString(page, -1) {
		if tag != `<script src="/ui/static/app.js" defer>` {
			t.Errorf("%s: script element %s: want only the dashboard's own script", what, tag)
		}
	}
	if strings.Contains(page, hostile) {
		t.Errorf("%s: holds %s unescaped", what, hostile)
	}
}

func TestPages(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	// A warning event whose text is hostile.
	ev := &api.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings.1"}, Type: api.EventTypeWarning, Reason: "Hostile",
		Message:        hostile,
		InvolvedObject: api.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "settings", APIVersion: "v1"},
		LastTimestamp:  metav1.Now()}
	if _, err := c.admin.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	sec := &api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Data: map[string][]byte{"password": []byte("s3cret-value")}}
	if _, err := c.admin.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	b := c.browser(t)
	b.login(c.cp.Credentials().AdminToken)

	resp, page := b.do("GET", "/ui/", nil)
	checkPage(t, "overview", page)
	if resp.Header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy || strings.Contains(ui.ContentSecurityPolicy, "unsafe-inline") {
		t.Errorf("CSP %q", resp.Header.Get("Content-Security-Policy"))
	}
	for _, want := range []string{`data-source="hello"`, `<span class="ready r-true">True</span>`, "Hostile", "&lt;script&gt;", `data-stream="/ui/stream/"`} {
		if !strings.Contains(page, want) {
			t.Errorf("overview lacks %q:\n%s", want, page)
		}
	}
	_, page = b.do("GET", "/ui/?q=nomatch", nil)
	if strings.Contains(page, `data-source="hello"`) || !strings.Contains(page, "No source matches") {
		t.Errorf("a search matching nothing still lists hello")
	}
	_, page = b.do("GET", "/ui/?status=notready", nil)
	if strings.Contains(page, `data-source="hello"`) {
		t.Errorf("the not-Ready filter lists the Ready hello")
	}

	resp, page = b.do("GET", "/ui/sources/hello", nil)
	checkPage(t, "source", page)
	for _, want := range []string{`data-kind="ConfigMap" data-name="settings"`, `data-kind="Service" data-name="web"`, `data-kind="EndpointSlice"`, `id="sync"`, "ReconciliationSucceeded"} {
		if !strings.Contains(page, want) {
			t.Errorf("source page lacks %q:\n%s", want, page)
		}
	}
	// The EndpointSlice is drawn under its Service.
	svc := strings.Index(page, `data-kind="Service" data-name="web"`)
	if es := strings.Index(page, `data-kind="EndpointSlice"`); svc < 0 || es < svc {
		t.Errorf("the EndpointSlice is not under the Service")
	}

	_, page = b.do("GET", "/ui/objects/configmaps/default/settings", nil)
	checkPage(t, "configmap", page)
	for _, want := range []string{"greeting: hello", "note: &lt;script&gt;alert(&#34;x&#34;)", "Hostile"} {
		if !strings.Contains(page, want) {
			t.Errorf("configmap page lacks %q:\n%s", want, page)
		}
	}
	_, page = b.do("GET", "/ui/objects/secrets/default/db", nil)
	if strings.Contains(page, "s3cret") || strings.Contains(page, "czNjcmV0") || !strings.Contains(page, "hidden: 12 bytes") {
		t.Errorf("secret page shows its data:\n%s", page)
	}
	resp, page = b.do("GET", "/ui/objects/configmaps/default/missing", nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(page, `class="error"`) || !strings.Contains(page, "not found") {
		t.Errorf("a missing object: %s, want 404 with the API's message in the page:\n%s", resp.Status, page)
	}
	resp, _ = b.do("GET", "/ui/objects/nosuch/default/x", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown resource: %s, want 404", resp.Status)
	}
	resp, page = b.do("GET", "/ui/nodes", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "<h1>Nodes") {
		t.Errorf("nodes page: %s\n%s", resp.Status, page)
	}
	resp, _ = b.do("GET", "/ui/static/app.js", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}

func TestSyncNeedsCSRFAndAsksForASync(t *testing.T) {
	c := startCluster(t)
	b := c.browser(t)
	csrf := b.login(c.cp.Credentials().AdminToken)
	if resp, _ := b.do("POST", "/ui/sources/hello/sync", url.Values{"csrf": {"forged"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sync with a forged token: %s, want 403", resp.Status)
	}
	if resp, _ := b.do("POST", "/ui/sources/hello/sync", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sync without a token: %s, want 403", resp.Status)
	}
	obj, _ := c.admin.Get(context.Background(), api.KindOf(&api.Source{}), "", "hello")
	if v := obj.GetAnnotations()[api.AnnotationReconcileRequestedAt]; v != "" {
		t.Fatalf("a refused sync was asked for: %q", v)
	}
	resp, _ := b.do("POST", "/ui/sources/hello/sync", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/ui/sources/hello") {
		t.Fatalf("sync: %s to %q", resp.Status, resp.Header.Get("Location"))
	}
	testtool.WaitFor(t, 20*time.Second, "the sync answered", func() error {
		obj, err := c.admin.Get(context.Background(), api.KindOf(&api.Source{}), "", "hello")
		if err != nil {
			return err
		}
		src := obj.(*api.Source)
		at := src.Annotations[api.AnnotationReconcileRequestedAt]
		if at == "" || src.Status.LastHandledReconcileAt != at {
			return fmt.Errorf("requested %q, handled %q", at, src.Status.LastHandledReconcileAt)
		}
		return nil
	})
	resp, page := b.do("POST", "/ui/sources/missing/sync", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(page, `class="error"`) {
		t.Errorf("sync of a missing source: %s\n%s", resp.Status, page)
	}
}

// Suspend and resume set and clear spec.suspend as the viewer, behind
// the session's CSRF token, and the page offers the one that applies.
func TestSuspendAndResumeNeedCSRFAndSetSpecSuspend(t *testing.T) {
	c := startCluster(t)
	b := c.browser(t)
	csrf := b.login(c.cp.Credentials().AdminToken)
	suspended := func() *api.Source {
		t.Helper()
		obj, err := c.admin.Get(context.Background(), api.KindOf(&api.Source{}), "", "hello")
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*api.Source)
	}
	_, page := b.do("GET", "/ui/sources/hello", nil)
	if !strings.Contains(page, `id="suspend"`) || strings.Contains(page, `id="resume"`) {
		t.Errorf("a running source's page offers no Suspend, or a Resume:\n%s", page)
	}
	for _, form := range []url.Values{{"csrf": {"forged"}}, {}} {
		if resp, _ := b.do("POST", "/ui/sources/hello/suspend", form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("suspend with csrf %q: %s, want 403", form.Get("csrf"), resp.Status)
		}
	}
	if suspended().Spec.Suspend {
		t.Fatal("a refused suspend suspended the source")
	}
	resp, _ := b.do("POST", "/ui/sources/hello/suspend", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/sources/hello" {
		t.Fatalf("suspend: %s to %q", resp.Status, resp.Header.Get("Location"))
	}
	testtool.WaitFor(t, 20*time.Second, "the source Suspended", func() error {
		src := suspended()
		if c := readyOf(src); !src.Spec.Suspend || c == nil || c.Reason != api.ReasonSuspended {
			return fmt.Errorf("suspend %t, ready %+v", src.Spec.Suspend, c)
		}
		return nil
	})
	_, page = b.do("GET", "/ui/sources/hello", nil)
	if !strings.Contains(page, `id="resume"`) || !strings.Contains(page, `id="suspended"`) || strings.Contains(page, `id="sync"`) {
		t.Errorf("a suspended source's page offers no Resume, or still a Sync:\n%s", page)
	}
	if resp, _ := b.do("POST", "/ui/sources/hello/resume", url.Values{"csrf": {"forged"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("resume with a forged token: %s, want 403", resp.Status)
	}
	resp, _ = b.do("POST", "/ui/sources/hello/resume", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("resume: %s", resp.Status)
	}
	testtool.WaitFor(t, 20*time.Second, "the source Ready again", func() error {
		src := suspended()
		if c := readyOf(src); src.Spec.Suspend || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("suspend %t, ready %+v", src.Spec.Suspend, c)
		}
		return nil
	})
	resp, page = b.do("POST", "/ui/sources/missing/suspend", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(page, `class="error"`) {
		t.Errorf("suspend of a missing source: %s\n%s", resp.Status, page)
	}
}

func readyOf(src *api.Source) *metav1.Condition {
	for i, c := range src.Status.Conditions {
		if c.Type == api.SourceReady {
			return &src.Status.Conditions[i]
		}
	}
	return nil
}

// An object's page shows it live against what its source declares: in
// sync, or the diff the API's sources/diff gives (here a claim grown
// outside the source, which a correction cannot shrink back); a viewer
// not allowed to read the diff is told so.
func TestObjectPageDiffsLiveAgainstTheSource(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	// A class that lets claims grow, and a volume for the claim to bind.
	claim := "---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: manual\nprovisioner: kubernetes.io/no-provisioner\nallowVolumeExpansion: true\n" +
		"---\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: disk\nspec:\n  capacity:\n    storage: 5Gi\n  accessModes: [ReadWriteOnce]\n" +
		"  storageClassName: manual\n  hostPath:\n    path: /tmp/berth-ui-disk\n" +
		"---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: default\nspec:\n" +
		"  accessModes: [ReadWriteOnce]\n  storageClassName: manual\n  resources:\n    requests:\n      storage: 1Gi\n"
	if err := os.WriteFile(filepath.Join(c.dir, "claim.yaml"), []byte(claim), 0o644); err != nil {
		t.Fatal(err)
	}
	pvcs := api.KindOf(&api.PersistentVolumeClaim{})
	testtool.WaitFor(t, 60*time.Second, "the claim bound", func() error {
		obj, err := c.admin.Get(ctx, pvcs, "default", "data")
		if err != nil {
			return err
		}
		if ph := obj.(*api.PersistentVolumeClaim).Status.Phase; ph != api.ClaimBound {
			return fmt.Errorf("claim %s", ph)
		}
		return nil
	})
	b := c.browser(t)
	b.login(c.cp.Credentials().AdminToken)
	_, page := b.do("GET", "/ui/objects/configmaps/default/settings", nil)
	if !strings.Contains(page, `id="in-sync"`) || strings.Contains(page, `class="diff"`) {
		t.Errorf("a ConfigMap as its source declares it is not shown in sync:\n%s", page)
	}
	// Grown straight in the store: the API would ask the StorageClass.
	obj, err := c.cp.Store().Get(pvcs, "default", "data")
	if err != nil {
		t.Fatal(err)
	}
	grown := obj.DeepCopyObject().(*api.PersistentVolumeClaim)
	grown.Spec.Resources.Requests[api.ResourceStorage] = resource.MustParse("2Gi")
	if _, err := c.cp.Store().Update(ctx, grown); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 30*time.Second, "the claim's diff", func() error {
		_, page = b.do("GET", "/ui/objects/persistentvolumeclaims/default/data", nil)
		for _, want := range []string{`<pre class="diff"`, `<span class="d-del">-      storage: 2Gi</span>`, `<span class="d-add">&#43;      storage: 1Gi</span>`, "&#43;&#43;&#43; source@"} {
			if !strings.Contains(page, want) {
				return fmt.Errorf("no %q in:\n%s", want, page)
			}
		}
		return nil
	})
	checkPage(t, "claim", page)
}

// events reads server-sent events off a stream into a channel.
func events(t *testing.T, b *browser, path string) (<-chan [2]string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", b.base+path, nil)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("GET %s: %s %s", path, resp.Status, resp.Header.Get("Content-Type"))
	}
	out := make(chan [2]string, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var ev string
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "event: "):
				ev = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				out <- [2]string{ev, strings.TrimPrefix(l, "data: ")}
				ev = ""
			}
		}
	}()
	return out, func() { cancel(); resp.Body.Close(); <-done }
}

func next(t *testing.T, ch <-chan [2]string, what string) [2]string {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the stream ended", what)
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no event", what)
	}
	return [2]string{}
}

var rvAttr = regexp.MustCompile(`data-rv="(\d+)"`)

func TestChangeStreamSaysWhenWhatThePageShowsChanged(t *testing.T) {
	c := startCluster(t)
	b := c.browser(t)
	b.login(c.cp.Credentials().AdminToken)
	_, page := b.do("GET", "/ui/sources/hello", nil)
	m := rvAttr.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no data-rv in the page")
	}
	if resp, _ := b.do("GET", "/ui/stream/sources/hello", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a stream without rv: %s, want 400", resp.Status)
	}
	if resp, _ := b.do("GET", "/ui/stream/nosuch/page?rv=1", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a stream of no page: %s, want 404", resp.Status)
	}
	ch, stop := events(t, b, "/ui/stream/sources/hello?rv="+m[1])
	defer stop()
	// A change to an object of the source's tree.
	if err := os.WriteFile(filepath.Join(c.dir, "app.yaml"), []byte(strings.Replace(manifests, "port: 80", "port: 81", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch, "after the service changed"); ev[0] != "change" {
		t.Errorf("got %v, want change", ev)
	}

	// Close ends the streams.
	c.cp.UI().Close()
	for range ch {
	}
}

func TestLogsStreamReportsAnAPIErrorInTheStream(t *testing.T) {
	c := startCluster(t)
	b := c.browser(t)
	b.login(c.cp.Credentials().AdminToken)
	if resp, _ := b.do("GET", "/ui/logs/default/web?tail=lots", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad tail: %s, want 400", resp.Status)
	}
	ch, stop := events(t, b, "/ui/logs/default/nosuchpod")
	defer stop()
	ev := next(t, ch, "logs of a missing pod")
	if ev[0] != "failure" || !strings.Contains(ev[1], "not found") {
		t.Errorf("got %v, want a failure naming the missing pod", ev)
	}
	if ev := next(t, ch, "after the failure"); ev[0] != "end" {
		t.Errorf("got %v, want end", ev)
	}
}

// A service account reads only its own namespace: the dashboard shows it
// that and no count of what it may not list.
func TestAViewerSeesWhatTheAPILetsThemSee(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	for _, o := range []api.Object{
		&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "viewer"}},
		&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mine"}},
		// It reads its namespace because a binding lets it, as in
		// Kubernetes.
		&api.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "reader"},
			Rules: []api.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
		&api.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "viewer-reads"},
			RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.RoleRefRole, Name: "reader"},
			Subjects: []api.Subject{{Kind: api.SubjectServiceAccount, Name: "viewer", Namespace: "team"}}},
	} {
		if _, err := c.admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.admin.Do(ctx, "POST", "/api/v1/namespaces/team/serviceaccounts/viewer/token", nil,
		[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tr)
	resp.Body.Close()
	if err != nil || tr.Status.Token == "" {
		t.Fatalf("token request: %v %+v", err, tr)
	}
	b := c.browser(t)
	b.login(tr.Status.Token)
	_, page := b.do("GET", "/ui/", nil)
	checkPage(t, "viewer overview", page)
	if strings.Contains(page, `data-source="hello"`) || !strings.Contains(page, "not allowed to list") || !strings.Contains(page, "system:serviceaccount:team:viewer") {
		t.Errorf("viewer overview:\n%s", page)
	}
	if regexp.MustCompile(`class="n">\d`).MatchString(page) {
		t.Errorf("viewer overview counts what the viewer may not list:\n%s", page)
	}
	_, page = b.do("GET", "/ui/?namespace=team", nil)
	if !strings.Contains(page, `<span class="n">0</span>`) {
		t.Errorf("viewer overview of its namespace shows no pod count:\n%s", page)
	}
	resp2, page := b.do("GET", "/ui/objects/configmaps/default/settings", nil)
	if resp2.StatusCode != http.StatusForbidden || strings.Contains(page, "greeting") || !strings.Contains(page, "forbidden") {
		t.Errorf("viewer reading another namespace: %s\n%s", resp2.Status, page)
	}
	_, page = b.do("GET", "/ui/objects/configmaps/team/mine", nil)
	if !strings.Contains(page, "<h1><span class=\"kind\">ConfigMap</span>") {
		t.Errorf("viewer reading its own namespace:\n%s", page)
	}
	csrf := formValue(t, page, "csrf")
	resp2, page = b.do("POST", "/ui/sources/hello/sync", url.Values{"csrf": {csrf}})
	if resp2.StatusCode != http.StatusForbidden || !strings.Contains(page, "forbidden") {
		t.Errorf("viewer's sync: %s, want 403 with the API's message\n%s", resp2.Status, page)
	}
	for _, verb := range []string{"suspend", "resume"} {
		resp2, page = b.do("POST", "/ui/sources/hello/"+verb, url.Values{"csrf": {csrf}})
		if resp2.StatusCode != http.StatusForbidden || !strings.Contains(page, "forbidden") {
			t.Errorf("viewer's %s: %s, want 403 with the API's message\n%s", verb, resp2.Status, page)
		}
	}
	if obj, err := c.admin.Get(ctx, api.KindOf(&api.Source{}), "", "hello"); err != nil || obj.(*api.Source).Spec.Suspend {
		t.Errorf("the viewer's refused suspend suspended the source: %v", err)
	}
}

// A git source's commit is shown with its subject, author and time, and a
// subject holding HTML is shown as text.
func TestOverviewShowsTheCommitEscaped(t *testing.T) {
	git := testtool.Need(t, "git")
	root := t.TempDir()
	bare, work := filepath.Join(root, "fleet.git"), filepath.Join(root, "work")
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+root, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=Ann <b>", "GIT_AUTHOR_EMAIL=ann@example.com", "GIT_COMMITTER_NAME=Ann", "GIT_COMMITTER_EMAIL=ann@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run(root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	run(root, "init", "--quiet", "--initial-branch=main", work)
	if err := os.WriteFile(filepath.Join(work, "app.yaml"), []byte(manifests), 0o644); err != nil {
		t.Fatal(err)
	}
	run(work, "add", "app.yaml")
	run(work, "commit", "--quiet", "-m", "deploy "+hostile)
	run(work, "push", "--quiet", bare, "HEAD:refs/heads/main")
	spec, err := source.Parse("git+file://" + bare + "?name=fleet")
	if err != nil {
		t.Fatal(err)
	}
	cp := cptest.Start(t, controlplane.Config{Sources: []source.Spec{spec}})
	admin, err := client.New(&client.Config{Server: cp.LocalURL(), Token: cp.Credentials().AdminToken, CAData: cp.Credentials().CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 20*time.Second, "source fleet applied", func() error {
		obj, err := admin.Get(context.Background(), api.KindOf(&api.Source{}), "", "fleet")
		if err != nil {
			return err
		}
		if obj.(*api.Source).Status.LastAppliedCommit == nil {
			return fmt.Errorf("no commit yet: %+v", obj.(*api.Source).Status)
		}
		return nil
	})
	b := (&cluster{cp: cp, admin: admin, base: cp.LocalURL()}).browser(t)
	b.login(cp.Credentials().AdminToken)
	for _, p := range []string{"/ui/", "/ui/sources/fleet", "/ui/?q=alert"} {
		_, page := b.do("GET", p, nil)
		checkPage(t, p, page)
		for _, want := range []string{`<div class="commit">deploy &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</div>`, "Ann b &lt;ann@example.com&gt;"} {
			if p == "/ui/sources/fleet" {
				want = strings.Replace(want, `<div class="commit">`, `<span class="commit">`, 1)
				want = strings.Replace(want, `</div>`, `</span>`, 1)
			}
			if !strings.Contains(page, want) {
				t.Errorf("%s lacks %s:\n%s", p, want, page)
			}
		}
	}
}

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// TestCustomResources drives a CustomResourceDefinition with kubectl as a
// user would: the CRD is established, its kind found through discovery
// (short name and category too), objects applied are defaulted, shown
// with the CRD's printer columns, refused with the field named when they
// break the schema or a CEL rule, scaled through the scale subresource,
// explained by kubectl explain from the published schema, read in a
// second version, and still there after the server restarts on
// its bolt store; deleting the CRD deletes them.
func TestCustomResources(t *testing.T) {
	testtool.Need(t, "kubectl")
	s := startServer(t)
	kc := func(args ...string) string { t.Helper(); return s.kubectl(t, args...) }
	kc("apply", "-f", "testdata/crd-widgets.yaml")
	kc("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")

	apply := func(manifest string) (string, error) {
		path := filepath.Join(t.TempDir(), "w.yaml")
		if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		return s.kubectlErr(t, "apply", "-f", path)
	}
	widget := func(name, spec string) string {
		return fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: %s\nspec:\n%s\n", name, spec)
	}
	waitFor(t, 30*time.Second, "kubectl to find widgets", func() error {
		out, err := apply(widget("small-one", "  size: small"))
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if out, err := apply(widget("big-one", "  size: large\n  replicas: 3")); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}

	// The columns of the CRD, with the default replicas filled in.
	out := kc("get", "widgets")
	if !strings.Contains(out, "SIZE") || !strings.Contains(out, "REPLICAS") {
		t.Fatalf("kubectl get widgets: no printer columns:\n%s", out)
	}
	for _, row := range []string{"small-one", "big-one"} {
		if !strings.Contains(out, row) {
			t.Fatalf("kubectl get widgets: no %s:\n%s", row, out)
		}
	}
	if !regexpMatch(`small-one\s+small\s+1\s`, out) || !regexpMatch(`big-one\s+large\s+3\s`, out) {
		t.Fatalf("kubectl get widgets: cells wrong:\n%s", out)
	}
	if out := kc("get", "wg", "small-one", "-o", "jsonpath={.spec.replicas}"); out != "1" {
		t.Fatalf("short name, defaulted replicas: %q", out)
	}
	if out := kc("get", "all"); !strings.Contains(out, "widget.example.com/big-one") {
		t.Fatalf("kubectl get all: no widgets (category all):\n%s", out)
	}
	if out := kc("get", "widgets.v1beta1.example.com", "big-one", "-o", "jsonpath={.apiVersion}"); out != "example.com/v1beta1" {
		t.Fatalf("second version: apiVersion %q", out)
	}
	if out := kc("get", "widgets", "--field-selector", "metadata.name=big-one", "-o", "name"); strings.TrimSpace(out) != "widget.example.com/big-one" {
		t.Fatalf("field selector: %q", out)
	}

	// kubectl explain reads the CRD's schema from /openapi/v3.
	if out := kc("explain", "widgets.spec"); !containsAll(out, "size\t<string> -required-", "replicas\t<integer>", "How big the widget is.") {
		t.Fatalf("kubectl explain widgets.spec:\n%s", out)
	}
	if out := kc("explain", "widget.spec.size"); !containsAll(out, "KIND:       Widget", "VERSION:    v1", "FIELD: size <string>", "ENUM:", "How big the widget is.") {
		t.Fatalf("kubectl explain widget.spec.size:\n%s", out)
	}

	// Refusals name the field.
	for _, c := range []struct{ spec, want string }{
		{"  size: medium", "spec.size"},
		{"  size: small\n  color: Red1", "spec.color"},
		{"  size: small\n  replicas: 11", "at most 10 replicas"},
		{"  replicas: 2", "spec.size"},
		{"  size: small\n  colour: red", "colour"},
	} {
		out, err := apply(widget("bad", c.spec))
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("apply spec %q: %v, %q, want a refusal naming %q", c.spec, err, out, c.want)
		}
	}

	// Scale and status.
	kc("scale", "widget", "big-one", "--replicas=5")
	if out := kc("get", "widget", "big-one", "-o", "jsonpath={.spec.replicas}"); out != "5" {
		t.Fatalf("after kubectl scale: replicas %q", out)
	}
	kc("patch", "widget", "big-one", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":5}}`)
	if out := kc("get", "widget", "big-one", "-o", "jsonpath={.status.replicas}/{.metadata.generation}"); out != "5/2" {
		t.Fatalf("status/generation after the status write: %q", out)
	}

	// A restart on the same bolt file keeps the CRD and its objects.
	s.stop(syscall.SIGTERM, 30*time.Second)
	s = startServerIn(t, s.dataDir)
	waitFor(t, 30*time.Second, "widgets after a restart", func() error {
		out, err := s.kubectlErr(t, "get", "widgets", "-o", "name")
		if err != nil || !strings.Contains(out, "widget.example.com/big-one") || !strings.Contains(out, "widget.example.com/small-one") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})

	// Deleting the CRD deletes its objects.
	s.kubectl(t, "delete", "crd", "widgets.example.com")
	s.kubectl(t, "apply", "-f", "testdata/crd-widgets.yaml")
	s.kubectl(t, "wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	waitFor(t, 30*time.Second, "an empty list of widgets", func() error {
		out, err := s.kubectlErr(t, "get", "widgets", "-o", "name")
		if err != nil || strings.TrimSpace(out) != "" {
			return fmt.Errorf("%v: %q", err, out)
		}
		return nil
	})
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// containsAll reports whether s holds every one of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestCustomResourcesFromGit applies, from a git source, one revision
// holding a Flux-style CRD and objects of its kind: the CRD goes in
// first, the objects once it is Established, defaulted by its schema and
// shown by kubectl with its printer columns. A later commit with an
// object that breaks the CRD's CEL rule is held back, naming the file and
// field, while the objects of the first stay.
func TestCustomResourcesFromGit(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "kubectl")
	crd, err := os.ReadFile("testdata/crd-releases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	release := func(name, spec string) string {
		return fmt.Sprintf("apiVersion: delivery.example.com/v1\nkind: Release\nmetadata:\n  name: %s\nspec:\n%s\n", name, spec)
	}
	r := testtool.NewGitRepo(t, "fleet")
	r.Write("crds/releases.yaml", string(crd))
	r.Write("apps/releases.yaml", release("podinfo", "  url: https://example.com/podinfo")+"---\n"+release("web", "  url: https://example.com/web\n  interval: 1m"))
	first := r.Push("main", "releases")

	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--source", "git+file://"+r.Bare+"?interval=1h", "--webhook-secret-file", secretFile)
	c := s.client(t)
	waitFor(t, 30*time.Second, "the first revision", func() error {
		if src := s.source(t, c, "fleet"); src.Status.LastAppliedRevision != first {
			_, reason, msg := readyCondition(src)
			return fmt.Errorf("applied %q: %s: %s", src.Status.LastAppliedRevision, reason, msg)
		}
		return nil
	})
	if out := s.kubectl(t, "get", "crd", "releases.delivery.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`); out != "True" {
		t.Fatalf("the CRD is not Established: %q", out)
	}
	s.kubectl(t, "patch", "release", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)
	out := s.kubectl(t, "get", "releases")
	if !containsAll(out, "NAME", "URL", "INTERVAL", "READY", "AGE") ||
		!regexpMatch(`podinfo\s+https://example.com/podinfo\s+10m\s+<none>\s`, out) ||
		!regexpMatch(`web\s+https://example.com/web\s+1m\s+True\s`, out) {
		t.Fatalf("kubectl get releases: want the printer columns, the schema's default interval and the status:\n%s", out)
	}

	// berth get knows the kind from the server's CRDs, by every name, and
	// prints the CRD's printer columns as kubectl does.
	for _, name := range []string{"releases", "release", "rel", "Release", "releases.delivery.example.com"} {
		out := s.mustBerth(t, "get", name)
		if !containsAll(out, "NAME", "URL", "INTERVAL", "READY", "AGE") ||
			!regexpMatch(`podinfo\s+https://example.com/podinfo\s+10m\s+<none>\s`, out) ||
			!regexpMatch(`web\s+https://example.com/web\s+1m\s+True\s`, out) {
			t.Fatalf("berth get %s:\n%s", name, out)
		}
	}
	if out := s.mustBerth(t, "get", "rel", "web", "-o", "json"); !containsAll(out, `"apiVersion": "delivery.example.com/v1"`, `"kind": "Release"`, `"url": "https://example.com/web"`) {
		t.Fatalf("berth get rel web -o json:\n%s", out)
	}
	if out := s.mustBerth(t, "get", "release/podinfo", "-o", "yaml"); !containsAll(out, "kind: Release", "interval: 10m") {
		t.Fatalf("berth get release/podinfo -o yaml:\n%s", out)
	}
	if out := s.mustBerth(t, "get", "releases", "-o", "wide", "-A"); !containsAll(out, "NAMESPACE", "URL", "READY") || !strings.Contains(out, "default ") {
		t.Fatalf("berth get releases -o wide -A:\n%s", out)
	}

	// An object that breaks the CEL rule holds its revision back.
	r.Write("apps/releases.yaml", release("podinfo", "  url: https://example.com/podinfo")+"---\n"+release("web", "  url: http://example.com/web"))
	bad := r.Push("main", "plain http")
	if code := s.hook(t, "s3cret", "fleet", true); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	waitFor(t, 30*time.Second, "the invalid revision to be held back", func() error {
		src := s.source(t, c, "fleet")
		status, reason, msg := readyCondition(src)
		if src.Status.LastAttemptedRevision != bad || status != "False" {
			return fmt.Errorf("attempted %s: %s %s: %s", src.Status.LastAttemptedRevision, status, reason, msg)
		}
		if reason != api.ReasonInvalidRevision || !containsAll(msg, "apps/releases.yaml", "doc 1", "spec", "url must be an https URL", "still at revision "+first) {
			t.Fatalf("Ready=False %s: %s", reason, msg)
		}
		if src.Status.LastAppliedRevision != first {
			t.Fatalf("applied %s, want %s still", src.Status.LastAppliedRevision, first)
		}
		return nil
	})
	if out := s.kubectl(t, "get", "release", "web", "-o", "jsonpath={.spec.url}"); out != "https://example.com/web" {
		t.Fatalf("web after the held-back revision: url %q", out)
	}
}

// TestPlanAndDiffOfACRDTree: berth plan and berth diff of a tree holding a
// CRD and objects of its kind, before the CRD is applied, as a user
// reviews a chart's crds/ and templates: the plan creates the CRD, then
// the objects (defaulted by the tree's schema); an object that breaks the
// CRD's CEL rule is refused naming its field; once applied, nothing is
// left to change, and the server still serves no kind it did not have
// while only plans ran.
func TestPlanAndDiffOfACRDTree(t *testing.T) {
	t.Parallel()
	crd, err := os.ReadFile("testdata/crd-releases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	release := func(name, url string) string {
		return fmt.Sprintf("apiVersion: delivery.example.com/v1\nkind: Release\nmetadata:\n  name: %s\nspec:\n  url: %s\n", name, url)
	}
	write("crd.yaml", string(crd))
	write("releases.yaml", release("podinfo", "https://example.com/podinfo"))
	s := startServer(t)

	out, stderr, code := s.berth(t, "plan", "-f", dir)
	if code != 0 || !containsAll(out, "create  CustomResourceDefinition/releases.delivery.example.com", "create  Release/default/podinfo", "Result: fits") {
		t.Fatalf("berth plan: exit %d\n%s\nstderr: %s", code, out, stderr)
	}
	out, stderr, code = s.berth(t, "diff", "-f", dir)
	if code != 1 || !containsAll(out, "+++ merged/release.delivery.example.com/default/podinfo", "+  url: https://example.com/podinfo", "+  interval: 10m") {
		t.Fatalf("berth diff: exit %d\n%s\nstderr: %s", code, out, stderr)
	}
	if _, stderr, code := s.berth(t, "get", "releases"); code == 0 || !strings.Contains(stderr, "releases") {
		t.Fatalf("berth get releases after a plan and a diff: exit %d, stderr %q: the server serves the kind of a CRD only planned", code, stderr)
	}

	write("releases.yaml", release("podinfo", "http://example.com/podinfo"))
	for _, cmd := range []string{"plan", "diff"} {
		if _, stderr, code := s.berth(t, cmd, "-f", dir); code != 2 || !containsAll(stderr, "releases.yaml", "spec", "url must be an https URL", "nothing was sent") {
			t.Fatalf("berth %s of a release its CEL rule refuses: exit %d\nstderr: %s", cmd, code, stderr)
		}
	}

	write("releases.yaml", release("podinfo", "https://example.com/podinfo"))
	s.mustBerth(t, "apply", "-f", dir)
	if out, stderr, code := s.berth(t, "diff", "-f", dir); code != 0 || out != "" {
		t.Fatalf("berth diff after apply: exit %d\n%s\nstderr: %s", code, out, stderr)
	}
	if out := s.kubectl(t, "get", "release", "podinfo", "-o", "jsonpath={.spec.interval}"); out != "10m" {
		t.Fatalf("the applied release: interval %q", out)
	}
}

// TestGetCustomResourceWithRightsOnItAlone: a user whose Role grants
// reading releases, and nothing on CustomResourceDefinitions, gets them
// with berth get by every name discovery gives (the kind is learned from
// /apis, as kubectl learns it), shown with the CRD's printer columns
// from the server's Table, as kubectl shows them, though the CRD is not
// the user's to read.
func TestGetCustomResourceWithRightsOnItAlone(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	rbac := filepath.Join(dir, "rbac.yaml")
	if err := os.WriteFile(rbac, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: release-reader, namespace: default}
rules:
- apiGroups: [delivery.example.com]
  resources: [releases]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: jane-reads-releases, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: release-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(dir, "release.yaml")
	if err := os.WriteFile(release, []byte("apiVersion: delivery.example.com/v1\nkind: Release\nmetadata: {name: podinfo}\nspec: {url: https://example.com/podinfo}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.mustBerth(t, "apply", "-f", "testdata/crd-releases.yaml", "-f", release, "-f", rbac)

	jane := filepath.Join(dir, "jane.kubeconfig")
	if _, stderr, code := run(t, "token", "create-user", "jane", "--ttl", "1h", "--data-dir", s.dataDir, "-o", jane); code != 0 {
		t.Fatalf("berth token create-user: %d %s", code, stderr)
	}
	asJane := func(args ...string) (string, string, int) {
		t.Helper()
		return run(t, append([]string{"--kubeconfig", jane}, args...)...)
	}
	if _, stderr, code := asJane("get", "crd"); code == 0 || !strings.Contains(stderr, `cannot list resource "customresourcedefinitions"`) {
		t.Fatalf("berth get crd as jane: exit %d, %s: jane must not read CRDs for this test", code, stderr)
	}
	for _, name := range []string{"releases", "release", "rel", "Release", "releases.delivery.example.com"} {
		out, stderr, code := asJane("get", name)
		if code != 0 || !regexpMatch(`^NAME\s+URL\s+INTERVAL\s+READY\s+AGE\npodinfo\s+https://example.com/podinfo\s+10m\s+<none>\s+\S+\n$`, out) {
			t.Fatalf("berth get %s as jane: exit %d\n%s\nstderr: %s", name, code, out, stderr)
		}
	}
	if out, stderr, code := asJane("get", "rel", "podinfo", "-o", "jsonpath={.spec.interval}"); code != 0 || out != "10m" {
		t.Fatalf("berth get rel podinfo as jane: exit %d, %q, %s", code, out, stderr)
	}
	if _, stderr, code := asJane("get", "releases", "-n", "kube-system"); code == 0 ||
		!strings.Contains(stderr, `cannot list resource "releases" in API group "delivery.example.com" in the namespace "kube-system"`) {
		t.Fatalf("berth get releases -n kube-system as jane: exit %d, %s", code, stderr)
	}
}

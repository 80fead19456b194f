package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

// hook posts a signed webhook for a source and returns the status code.
func (s *server) hook(t *testing.T, secret, name string, sign bool) int {
	t.Helper()
	return s.post(t, secret, name, `{"ref":"refs/heads/main"}`, sign)
}

// hookBody posts a signed webhook with the given body.
func (s *server) hookBody(t *testing.T, secret, name, body string) int {
	t.Helper()
	return s.post(t, secret, name, body, true)
}

func (s *server) post(t *testing.T, secret, name, payload string, sign bool) int {
	t.Helper()
	body := []byte(payload)
	req, err := http.NewRequest(http.MethodPost, s.url+"/hooks/"+name, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if sign {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	}
	req.Header.Set("X-GitHub-Event", "push")
	resp, err := s.httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// get reads an unauthenticated path of the API.
func (s *server) get(t *testing.T, path string) string {
	t.Helper()
	_, body := s.status(t, path)
	return body
}

// source reads a Source through the API.
func (s *server) source(t *testing.T, c *client.Client, name string) *api.Source {
	t.Helper()
	obj, err := c.Get(context.Background(), api.KindOf(&api.Source{}), "", name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*api.Source)
}

func readyCondition(src *api.Source) (string, string, string) {
	for _, c := range src.Status.Conditions {
		if c.Type == api.SourceReady {
			return string(c.Status), c.Reason, c.Message
		}
	}
	return "", "", ""
}

func (s *server) client(t testing.TB) *client.Client {
	t.Helper()
	cfg, err := client.LoadKubeconfig(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGitOps(t *testing.T) {
	r := testtool.NewGitRepo(t, "fleet")
	hello, err := os.ReadFile("testdata/hello/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r.Write("apps/hello.yaml", string(hello))
	r.Write("apps/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"0\"\n")
	first := r.Push("main", "hello")

	secret := "webhook-s3cret"
	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--source", "git+file://"+r.Bare+"?interval=1h", "--webhook-secret-file", secretFile)
	c := s.client(t)

	waitFor(t, 30*time.Second, "the first revision", func() error {
		out, _, _ := s.berth(t, "get", "sources")
		if !strings.Contains(out, "fleet") || !strings.Contains(out, first[:12]) || !strings.Contains(out, "True") {
			return fmt.Errorf("get sources:\n%s", out)
		}
		return nil
	})
	out := s.mustBerth(t, "get", "sources")
	if !strings.HasPrefix(out, "NAME    TYPE   REVISION       READY   HEALTH   MESSAGE\nfleet   git    "+first[:12]) {
		t.Errorf("get sources:\n%s", out)
	}
	s.mustBerth(t, "get", "deploy", "hello")
	s.mustBerth(t, "get", "svc", "hello")
	deploy, err := s.getJSON(t, "deploy", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if ann, _ := field(deploy, "metadata.annotations").(map[string]any); ann[api.AnnotationSource] != "fleet" {
		t.Errorf("annotations %v", ann)
	}
	if ready := s.get(t, "/readyz?verbose"); !strings.Contains(ready, "[+]sources ok") {
		t.Errorf("readyz:\n%s", ready)
	}

	// A push and a signed webhook apply the change.
	r.Write("apps/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"1\"\n")
	second := r.Push("main", "n=1")
	if code := s.hook(t, secret, "fleet", false); code != http.StatusUnauthorized {
		t.Errorf("unsigned webhook: %d", code)
	}
	if code := s.hook(t, "wrong", "fleet", true); code != http.StatusUnauthorized {
		t.Errorf("badly signed webhook: %d", code)
	}
	if src := s.source(t, c, "fleet"); src.Status.LastAttemptedRevision != first {
		t.Errorf("a refused webhook synced: %s", src.Status.LastAttemptedRevision)
	}
	if code := s.hook(t, secret, "nope", true); code != http.StatusNotFound {
		t.Errorf("webhook of an unknown source: %d", code)
	}
	if code := s.hook(t, secret, "fleet", true); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	waitFor(t, 10*time.Second, "the second revision", func() error {
		if got := s.source(t, c, "fleet").Status.LastAppliedRevision; got != second {
			return fmt.Errorf("revision %s", got)
		}
		return nil
	})
	cm, err := s.getJSON(t, "cm", "settings")
	if err != nil || field(cm, "data.count") != "1" {
		t.Fatalf("settings: %v %v", cm, err)
	}

	// berth diff against what the source applied.
	diffDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(diffDir, "config.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := s.berth(t, "diff", "-f", diffDir); code != 0 || stdout != "" {
		t.Errorf("diff of the applied state: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := os.WriteFile(filepath.Join(diffDir, "config.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := s.berth(t, "diff", "-f", diffDir); code != 1 || !strings.Contains(stdout, "-  count: \"1\"\n+  count: \"2\"\n") || !strings.Contains(stderr, `owned by source "fleet"`) {
		t.Errorf("diff of a change: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := os.WriteFile(filepath.Join(diffDir, "bad.yaml"), []byte("kind: Nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, code := s.berth(t, "diff", "-f", diffDir); code != 2 {
		t.Errorf("diff of an invalid manifest: exit %d", code)
	}

	// A broken manifest: nothing changes, Ready=False names the file.
	r.Write("apps/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"2\"\n")
	r.Write("apps/broken.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: broken\nspec:\n  replicaz: 2\n")
	broken := r.Push("main", "broken")
	if code := s.hook(t, secret, "fleet", true); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	waitFor(t, 10*time.Second, "the broken revision to be refused", func() error {
		list, err := s.getJSON(t, "sources")
		if err != nil {
			return err
		}
		items, _ := list["items"].([]any)
		if len(items) != 1 {
			return fmt.Errorf("items %v", items)
		}
		src := items[0].(map[string]any)
		if field(src, "status.lastAttemptedRevision") != broken {
			return fmt.Errorf("attempted %v", field(src, "status.lastAttemptedRevision"))
		}
		conds, _ := field(src, "status.conditions").([]any)
		for _, x := range conds {
			cond := x.(map[string]any)
			if cond["type"] == "Ready" && cond["status"] == "False" && cond["reason"] == "InvalidRevision" &&
				strings.Contains(cond["message"].(string), `apps/broken.yaml:doc 0 (line 6): spec.replicaz: unknown field "replicaz"`) {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})
	src := s.source(t, c, "fleet")
	if src.Status.LastAppliedRevision != second {
		t.Errorf("applied %s after a broken push", src.Status.LastAppliedRevision)
	}
	if cm, _ := s.getJSON(t, "cm", "settings"); field(cm, "data.count") != "1" {
		t.Errorf("part of a broken revision was applied: %v", field(cm, "data.count"))
	}

	// Deleting every file is held back by the prune guard...
	r.Git(r.Work, "rm", "-r", "--quiet", "apps")
	empty := r.Push("main", "delete everything")
	if code := s.hook(t, secret, "fleet", true); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	waitFor(t, 10*time.Second, "the prune guard", func() error {
		src := s.source(t, c, "fleet")
		if st, reason, _ := readyCondition(src); src.Status.LastAttemptedRevision != empty || st != "False" || reason != api.ReasonPruneGuard {
			return fmt.Errorf("attempted %s, ready %s %s", src.Status.LastAttemptedRevision, st, reason)
		}
		return nil
	})
	s.mustBerth(t, "get", "deploy", "hello")
	stdout, stderr, code := s.berth(t, "reconcile", "source", "fleet")
	if code != 1 || !strings.Contains(stderr, "PruneGuard") {
		t.Errorf("reconcile: exit %d\n%s%s", code, stdout, stderr)
	}
	// ... until the user allows it.
	stdout, stderr, code = s.berth(t, "reconcile", "source", "fleet", "--allow-prune")
	if code != 0 || !strings.Contains(stdout, "revision "+empty) || !strings.Contains(stdout, "3 pruned") {
		t.Fatalf("reconcile --allow-prune: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, obj := range []string{"deploy/hello", "svc/hello", "cm/settings"} {
		if _, _, code := s.berth(t, "get", obj); code != 1 {
			t.Errorf("%s not pruned", obj)
		}
	}
}

// TestGitOpsWebhookLatency measures push-to-applied over 20 pushes, each
// announced by a signed webhook.
func TestGitOpsWebhookLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 20 pushes")
	}
	r := testtool.NewGitRepo(t, "fleet")
	r.Write("config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"0\"\n")
	first := r.Push("main", "0")
	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	if err := os.WriteFile(secretFile, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--source", "git+file://"+r.Bare+"?interval=1h", "--webhook-secret-file", secretFile)
	c := s.client(t)
	waitFor(t, 30*time.Second, "the first revision", func() error {
		if got := s.source(t, c, "fleet").Status.LastAppliedRevision; got != first {
			return fmt.Errorf("revision %q", got)
		}
		return nil
	})
	const pushes = 20
	var fromPush, fromHook []time.Duration
	for i := 1; i <= pushes; i++ {
		r.Write("config.yaml", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"%d\"\n", i))
		r.Git(r.Work, "add", "-A")
		r.Git(r.Work, "commit", "--quiet", "-m", fmt.Sprint(i))
		sha := r.Git(r.Work, "rev-parse", "HEAD")
		start := time.Now()
		r.Git(r.Work, "push", "--quiet", "origin", "main")
		hooked := time.Now()
		if code := s.hook(t, "s3cret", "fleet", true); code != http.StatusAccepted {
			t.Fatalf("webhook: %d", code)
		}
		deadline := time.Now().Add(10 * time.Second)
		for s.source(t, c, "fleet").Status.LastAppliedRevision != sha {
			if time.Now().After(deadline) {
				t.Fatalf("push %d not applied within 10s", i)
			}
			time.Sleep(2 * time.Millisecond)
		}
		done := time.Now()
		fromPush = append(fromPush, done.Sub(start))
		fromHook = append(fromHook, done.Sub(hooked))
	}
	slices.Sort(fromPush)
	slices.Sort(fromHook)
	p := func(d []time.Duration, q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	report, _ := json.Marshal(map[string]any{
		"pushes":             pushes,
		"push_to_applied_ms": map[string]float64{"p50": ms(p(fromPush, 0.5)), "p99": ms(p(fromPush, 0.99))},
		"hook_to_applied_ms": map[string]float64{"p50": ms(p(fromHook, 0.5)), "p99": ms(p(fromHook, 0.99))},
	})
	t.Logf("webhook latency: %s", report)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func TestDirSource(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\ndata:\n  count: \"1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(cwd, dir)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--source", "name=local,./"+rel)
	waitFor(t, 30*time.Second, "the dir source", func() error {
		cm, err := s.getJSON(t, "cm", "local")
		if err != nil || field(cm, "data.count") != "1" {
			return fmt.Errorf("%v %v", cm, err)
		}
		return nil
	})
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\ndata:\n  count: \"2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the edit", func() error {
		cm, err := s.getJSON(t, "cm", "local")
		if err != nil || field(cm, "data.count") != "2" {
			return fmt.Errorf("%v %v", field(cm, "data.count"), err)
		}
		return nil
	})
	out := s.mustBerth(t, "get", "sources")
	if !strings.Contains(out, "local   dir    sha256:") || !strings.Contains(out, "True") {
		t.Errorf("get sources:\n%s", out)
	}
}

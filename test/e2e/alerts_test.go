package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// TestAlertsAndBranchPlans runs the binary with a git source and an
// Alert made with berth apply: a push and its webhook reach a generic
// receiver as a signed "applied" event, a push to another branch as a
// "planned" one, and berth get alerts counts them.
func TestAlertsAndBranchPlans(t *testing.T) {
	r := testtool.NewGitRepo(t, "fleet")
	r.Write("apps/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"0\"\n")
	first := r.Push("main", "first")

	var mu sync.Mutex
	var got []map[string]any
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mac := hmac.New(sha256.New, []byte("alert-key"))
		mac.Write(body)
		if req.Header.Get("X-Berth-Signature") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	}))
	defer rcv.Close()
	events := func() string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, ev := range got {
			out = append(out, fmt.Sprintf("%v %v %v", ev["type"], ev["revision"], ev["branch"]))
		}
		return strings.Join(out, "\n")
	}

	secret := "webhook-s3cret"
	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--source", "git+file://"+r.Bare+"?ref=main&interval=1h", "--webhook-secret-file", secretFile)
	waitFor(t, 30*time.Second, "the first revision", func() error {
		if out, _, _ := s.berth(t, "get", "sources"); !strings.Contains(out, first[:12]) {
			return fmt.Errorf("get sources:\n%s", out)
		}
		return nil
	})
	manifest := filepath.Join(t.TempDir(), "alert.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Secret
metadata: {name: alert-key, namespace: kube-system}
stringData: {token: alert-key}
---
apiVersion: berth.dev/v1
kind: Alert
metadata: {name: hook}
spec:
  provider:
    type: generic
    address: `+rcv.URL+`
    secretRef: {name: alert-key}
  sources: ["*"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s.mustBerth(t, "apply", "-f", manifest)

	r.Write("apps/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  count: \"1\"\n")
	second := r.Push("main", "second")
	if code := s.hook(t, secret, "fleet", true); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	waitFor(t, 30*time.Second, "the applied event", func() error {
		if ev := events(); !strings.Contains(ev, "applied "+second) {
			return fmt.Errorf("events:\n%s", ev)
		}
		return nil
	})

	r.Git(r.Work, "checkout", "--quiet", "-b", "feature")
	r.Write("apps/more.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: more\n")
	r.Git(r.Work, "add", "-A")
	r.Git(r.Work, "commit", "--quiet", "-m", "more")
	r.Git(r.Work, "push", "--quiet", "origin", "feature")
	feature := r.Git(r.Work, "rev-parse", "HEAD")
	if code := s.hookBody(t, secret, "fleet", `{"ref":"refs/heads/feature","after":"`+feature+`"}`); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	waitFor(t, 60*time.Second, "the planned event", func() error {
		if ev := events(); !strings.Contains(ev, "planned "+feature+" feature") {
			return fmt.Errorf("events:\n%s", ev)
		}
		return nil
	})
	if _, _, code := s.berth(t, "get", "cm", "more"); code == 0 {
		t.Error("the planned branch was applied")
	}
	waitFor(t, 30*time.Second, "berth get alerts", func() error {
		out, _, _ := s.berth(t, "get", "alerts")
		if !regexp.MustCompile(`(?m)^hook\s+generic\s+\*\s+(\S+\s+)?2\s+0\s`).MatchString(out) {
			return fmt.Errorf("get alerts:\n%s", out)
		}
		return nil
	})
}

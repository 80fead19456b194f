package controlplane

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// triggers records the sources a webhook triggered.
type triggers struct {
	mu    sync.Mutex
	names []string
}

func (tr *triggers) trigger(name string) bool {
	if name != "fleet" {
		return false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.names = append(tr.names, name)
	return true
}

func (tr *triggers) got() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.names)
}

func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestWebhook(t *testing.T) {
	const secret, body = "s3cret", `{"ref":"refs/heads/main"}`
	// A push payload as large as GitHub sends (it caps them at 25 MB), and
	// one byte over the cap.
	const githubCap = 25 << 20
	large := `{"ref":"refs/heads/main","commits":"` + strings.Repeat("x", githubCap-40) + `"}`
	over := strings.Repeat("x", MaxWebhookBody+1)
	tests := []struct {
		name      string
		method    string
		path      string
		header    map[string]string
		body      string
		chunked   bool // no Content-Length: the cap is met while reading
		noSecret  bool
		code      int
		triggered bool
	}{
		{name: "github signature", path: "/hooks/fleet", header: map[string]string{HeaderHubSignature256: sign(secret, body)}, code: 202, triggered: true},
		{name: "gitlab token", path: "/hooks/fleet", header: map[string]string{HeaderGitlabToken: secret}, code: 202, triggered: true},
		{name: "missing signature", path: "/hooks/fleet", code: 401},
		{name: "signature of another body", path: "/hooks/fleet", header: map[string]string{HeaderHubSignature256: sign(secret, body+" ")}, code: 401},
		{name: "signature with another secret", path: "/hooks/fleet", header: map[string]string{HeaderHubSignature256: sign("other", body)}, code: 401},
		{name: "signature without prefix", path: "/hooks/fleet", header: map[string]string{HeaderHubSignature256: strings.TrimPrefix(sign(secret, body), "sha256=")}, code: 401},
		{name: "signature not hex", path: "/hooks/fleet", header: map[string]string{HeaderHubSignature256: "sha256=zz"}, code: 401},
		{name: "wrong gitlab token", path: "/hooks/fleet", header: map[string]string{HeaderGitlabToken: "nope"}, code: 401},
		{name: "unknown source, bad signature", path: "/hooks/other", code: 401},
		{name: "unknown source", path: "/hooks/other", header: map[string]string{HeaderHubSignature256: sign(secret, body)}, code: 404},
		{name: "no source", path: "/hooks/", header: map[string]string{HeaderHubSignature256: sign(secret, body)}, code: 404},
		{name: "GET", method: http.MethodGet, path: "/hooks/fleet", code: 405},
		{name: "no secret configured", path: "/hooks/fleet", header: map[string]string{HeaderGitlabToken: ""}, noSecret: true, code: 403},
		{name: "large push payload", path: "/hooks/fleet", body: large, header: map[string]string{HeaderHubSignature256: sign(secret, large)}, code: 202, triggered: true},
		{name: "large push payload, chunked", path: "/hooks/fleet", body: large, chunked: true, header: map[string]string{HeaderHubSignature256: sign(secret, large)}, code: 202, triggered: true},
		{name: "body too big", path: "/hooks/fleet", body: over, header: map[string]string{HeaderHubSignature256: sign(secret, over)}, code: 413},
		{name: "body too big, chunked", path: "/hooks/fleet", body: over, chunked: true, header: map[string]string{HeaderHubSignature256: sign(secret, over)}, code: 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &triggers{}
			h := &webhook{secret: []byte(secret), trigger: tr.trigger, log: slog.New(slog.DiscardHandler)}
			if tt.noSecret {
				h.secret = nil
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			method, b := tt.method, tt.body
			if method == "" {
				method = http.MethodPost
			}
			if b == "" {
				b = body
			}
			var r io.Reader = strings.NewReader(b)
			if tt.chunked {
				r = io.MultiReader(r) // hides the length
			}
			req, err := http.NewRequest(method, srv.URL+tt.path, r)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.code)
			}
			if got := len(tr.got()) > 0; got != tt.triggered {
				t.Errorf("triggered %v, want %v", got, tt.triggered)
			}
		})
	}
}

// TestWebhookRefusesBeforeReading: a request that brings no credential,
// a malformed signature or a wrong GitLab token is refused without a byte
// of its body read, however large it says it is.
func TestWebhookRefusesBeforeReading(t *testing.T) {
	h := &webhook{secret: []byte("s3cret"), trigger: (&triggers{}).trigger, log: slog.New(slog.DiscardHandler)}
	for name, header := range map[string]map[string]string{
		"no credential":       nil,
		"signature not hex":   {HeaderHubSignature256: "sha256=zz"},
		"signature too short": {HeaderHubSignature256: "sha256=abcd"},
		"wrong gitlab token":  {HeaderGitlabToken: "nope"},
		"signature no prefix": {HeaderHubSignature256: "abcd"},
	} {
		body := &countingReader{r: strings.NewReader(strings.Repeat("x", MaxWebhookBody))}
		r := httptest.NewRequest(http.MethodPost, "/hooks/fleet", body)
		for k, v := range header {
			r.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusUnauthorized || body.n != 0 {
			t.Errorf("%s: %d after reading %d bytes, want 401 after none", name, rec.Code, body.n)
		}
	}
}

// countingReader counts what is read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadWebhookSecret(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte("s3cret\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadWebhookSecret(p)
	if err != nil || string(got) != "s3cret" {
		t.Errorf("%q %v", got, err)
	}
	if err := os.WriteFile(p, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWebhookSecret(p); err == nil {
		t.Error("an empty secret was accepted")
	}
	if _, err := ReadWebhookSecret(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file was accepted")
	}
}

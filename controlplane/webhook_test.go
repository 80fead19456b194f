package controlplane

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
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
			h := newWebhook([]byte(secret), tr.trigger, slog.New(slog.DiscardHandler), clock.RealClock{})
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
	h := newWebhook([]byte("s3cret"), (&triggers{}).trigger, slog.New(slog.DiscardHandler), clock.RealClock{})
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

// countingHandler counts the log records written through it.
type countingHandler struct {
	slog.Handler
	mu sync.Mutex
	n  int
}

func (c *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (c *countingHandler) Handle(context.Context, slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return nil
}

func (c *countingHandler) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// post sends a request from an address straight to the handler.
func post(h http.Handler, remote string, header map[string]string, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/hooks/fleet", strings.NewReader(body))
	r.RemoteAddr = remote
	for k, v := range header {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// TestWebhookLimitsBadSignatures: 2,000 bad signatures from one address
// cost a handful of log lines, not 2,000; past the burst the sender gets
// 429 with a Retry-After before its body is read, and may try again once
// that has passed; another address is heard meanwhile.
func TestWebhookLimitsBadSignatures(t *testing.T) {
	const secret, body = "s3cret", `{"ref":"refs/heads/main"}`
	logs := &countingHandler{Handler: slog.DiscardHandler}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	tr := &triggers{}
	h := newWebhook([]byte(secret), tr.trigger, slog.New(logs), clk)
	bad := map[string]string{HeaderHubSignature256: sign("guess", body)}
	codes := map[int]int{}
	var retry string
	for range 2000 {
		rec := post(h, "203.0.113.7:40000", bad, body)
		codes[rec.Code]++
		if rec.Code == http.StatusTooManyRequests {
			retry = rec.Header().Get("Retry-After")
		}
	}
	if codes[http.StatusUnauthorized] != failureBurst || codes[http.StatusTooManyRequests] != 2000-failureBurst {
		t.Errorf("codes %v, want %d × 401 then 429", codes, failureBurst)
	}
	if n := logs.count(); n == 0 || n > failureBurst+1 {
		t.Errorf("%d log lines for 2,000 bad signatures, want at most %d", n, failureBurst+1)
	}
	secs, err := strconv.Atoi(retry)
	if err != nil || secs < 1 {
		t.Fatalf("Retry-After %q", retry)
	}
	// A throttled sender's body is not read.
	counted := &countingReader{r: strings.NewReader(strings.Repeat("x", 1<<20))}
	r := httptest.NewRequest(http.MethodPost, "/hooks/fleet", counted)
	r.RemoteAddr = "203.0.113.7:40001"
	r.Header.Set(HeaderHubSignature256, sign("guess", "x"))
	h.ServeHTTP(httptest.NewRecorder(), r)
	if counted.n != 0 {
		t.Errorf("a throttled sender had %d bytes read", counted.n)
	}
	// Another address, with the secret, is heard meanwhile.
	if rec := post(h, "[2001:db8::1]:443", map[string]string{HeaderHubSignature256: sign(secret, body)}, body); rec.Code != http.StatusAccepted {
		t.Errorf("another sender: %d, want 202", rec.Code)
	}
	// Once Retry-After has passed, the sender is heard again.
	clk.SetTime(clk.Now().Add(time.Duration(secs) * time.Second))
	if rec := post(h, "203.0.113.7:40002", map[string]string{HeaderGitlabToken: secret}, body); rec.Code != http.StatusAccepted {
		t.Errorf("after Retry-After: %d, want 202", rec.Code)
	}
}

// TestWebhookLimiterIsBounded: senders from ever new addresses fill no
// more than maxPeers limiters, forgotten once they would be full again,
// and their refusals' log lines stay paced.
func TestWebhookLimiterIsBounded(t *testing.T) {
	logs := &countingHandler{Handler: slog.DiscardHandler}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	h := newWebhook([]byte("s3cret"), (&triggers{}).trigger, slog.New(logs), clk)
	for i := range 3 * maxPeers {
		remote := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), 1000)
		post(h, remote.String(), nil, "")
	}
	if n := len(h.limit.peers); n > maxPeers+1 {
		t.Errorf("%d limiters kept, want at most %d", n, maxPeers+1)
	}
	if n := logs.count(); n > refusalLogBurst {
		t.Errorf("%d log lines for %d senders in no time, want at most %d", n, 3*maxPeers, refusalLogBurst)
	}
	clk.SetTime(clk.Now().Add(failureBurst * failureEvery))
	post(h, "192.0.2.1:1", nil, "")
	if n := len(h.limit.peers); n != 1 {
		t.Errorf("%d limiters kept once the others refilled, want 1", n)
	}
}

func TestPeerKey(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7:40000":       "203.0.113.7/32",
		"[::ffff:203.0.113.7]:1":  "203.0.113.7/32",
		"[2001:db8::1:2:3:4]:443": "2001:db8::/64",
		"[fe80::1%eth0]:443":      "fe80::/64",
		"not an address":          "invalid Prefix",
		"[2001:db8:0:1::9]:443":   "2001:db8:0:1::/64",
	} {
		if got := peerKey(in).String(); got != want {
			t.Errorf("peerKey(%q) = %s, want %s", in, got, want)
		}
	}
}

// FuzzPeerKey: any remote address gives a key, never a panic, and an
// address that parses gives a valid prefix holding it.
func FuzzPeerKey(f *testing.F) {
	for _, s := range []string{"203.0.113.7:1", "[2001:db8::1]:443", "[fe80::1%eth0]:1", "", ":", "[::ffff:1.2.3.4]:5", "garbage"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, remote string) {
		k := peerKey(remote)
		if host, _, err := net.SplitHostPort(remote); err == nil {
			if a, err := netip.ParseAddr(host); err == nil && (!k.IsValid() || !k.Contains(a.Unmap().WithZone(""))) {
				t.Errorf("peerKey(%q) = %s, which does not hold %s", remote, k, a)
			}
		}
	})
}

package pki_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/controlplane/pki"
	clocktesting "k8s.io/utils/clock/testing"
)

// pkiTestOptions is a server listening on one address with a few extra
// names, on a fake clock set to now (x509 verification elsewhere in the
// test, such as the TLS handshake, uses the real time).
func pkiTestOptions() (pki.Options, *clocktesting.FakePassiveClock) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	return pki.Options{
		Listen:    "10.1.2.3:6443",
		Hostname:  "Berth-Host",
		ExtraSANs: []string{"berth.example.com", "192.0.2.10", "[2001:db8::1]"},
		Clock:     clk,
	}, clk
}

// pkiTestSANs are the names pkiTestOptions must yield.
var pkiTestSANs = []string{"10.1.2.3", "localhost", "127.0.0.1", "::1", "berth-host", "berth.example.com", "192.0.2.10", "2001:db8::1"}

func pkiTestEnsure(t *testing.T, dir string, opts pki.Options) *pki.Credentials {
	t.Helper()
	c, err := pki.EnsureCredentials(dir, opts)
	if err != nil {
		t.Fatalf("EnsureCredentials: %v", err)
	}
	return c
}

// pkiTestFiles reads every file under dir, by relative path.
func pkiTestFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[rel] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pkiTestMode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestPKIFirstStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	opts, clk := pkiTestOptions()
	c := pkiTestEnsure(t, dir, opts)
	p := c.Paths

	want := map[string]fs.FileMode{
		p.Dir: 0o700, p.TLSDir: 0o700,
		p.CAKey: 0o600, p.NodeCAKey: 0o600, p.ServerKey: 0o600, p.AdminToken: 0o600, p.NodeToken: 0o600, p.SAKey: 0o600, p.AdminKubeconfig: 0o600,
		p.CACert: 0o644, p.NodeCACert: 0o644, p.ServerCert: 0o644,
	}
	for path, mode := range want {
		if got := pkiTestMode(t, path); got != mode {
			t.Errorf("%s: mode %v, want %v", path, got, mode)
		}
	}
	files := pkiTestFiles(t, dir)
	if len(files) != 10 {
		t.Errorf("files %v", pkiTestNames(files))
	}
	for name := range files {
		if strings.Contains(name, ".tmp-") {
			t.Errorf("temporary file left behind: %s", name)
		}
	}

	if !c.CACert.IsCA || c.CACert.NotAfter.Sub(clk.Now()) < 9*365*24*time.Hour {
		t.Errorf("CA: IsCA %v, NotAfter %v", c.CACert.IsCA, c.CACert.NotAfter)
	}
	leaf := c.ServingCert.Leaf
	if leaf == nil {
		t.Fatal("serving certificate has no Leaf")
	}
	if life := leaf.NotAfter.Sub(clk.Now()); life < 360*24*time.Hour || life > 366*24*time.Hour {
		t.Errorf("serving certificate lives %v", life)
	}
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("serving key %T", leaf.PublicKey)
	}
	if c.ServerURL != "https://10.1.2.3:6443" {
		t.Errorf("server URL %q", c.ServerURL)
	}
	if len(c.AdminToken) != 64 || len(c.NodeToken) != 64 || c.AdminToken == c.NodeToken {
		t.Errorf("tokens %q %q", c.AdminToken, c.NodeToken)
	}
	if tok, _ := os.ReadFile(p.AdminToken); strings.TrimSpace(string(tok)) != c.AdminToken {
		t.Errorf("admin-token file %q", tok)
	}
	if c.SigningKey == nil || c.SigningKey.Curve != elliptic.P256() {
		t.Errorf("signing key %v", c.SigningKey)
	}

	// Every wanted name verifies against the CA; others do not.
	for _, san := range pkiTestSANs {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: san, Roots: c.CAPool}); err != nil {
			t.Errorf("SAN %s: %v", san, err)
		}
	}
	for _, bad := range []string{"evil.example", "10.1.2.4", "berth-host.example"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: bad, Roots: c.CAPool}); err == nil {
			t.Errorf("certificate verifies for %s", bad)
		}
	}
}

func pkiTestNames(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPKITLSHandshake serves HTTPS with the serving certificate and dials
// it as each name a client may use, trusting only the CA.
func TestPKITLSHandshake(t *testing.T) {
	opts, _ := pkiTestOptions()
	c := pkiTestEnsure(t, t.TempDir(), opts)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{c.ServingCert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()

	get := func(cfg *tls.Config) error {
		tr := &http.Transport{TLSClientConfig: cfg}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(srv.URL)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && string(body) != "ok" {
			t.Errorf("body %q", body)
		}
		return err
	}
	for _, san := range pkiTestSANs {
		// The TCP peer is the loopback server either way; ServerName is
		// what the client checks the certificate against.
		if err := get(&tls.Config{RootCAs: c.CAPool, ServerName: san}); err != nil {
			t.Errorf("handshake as %s: %v", san, err)
		}
	}
	if err := get(&tls.Config{RootCAs: c.CAPool, ServerName: "evil.example"}); err == nil {
		t.Error("handshake succeeded for a name the certificate lacks")
	}
	if err := get(&tls.Config{ServerName: "localhost"}); err == nil {
		t.Error("handshake succeeded without trusting the CA")
	}
}

func TestPKIRestartReusesEverything(t *testing.T) {
	dir := t.TempDir()
	opts, clk := pkiTestOptions()
	first := pkiTestEnsure(t, dir, opts)
	before := pkiTestFiles(t, dir)

	clk.SetTime(clk.Now().Add(100 * 24 * time.Hour))
	second := pkiTestEnsure(t, dir, opts)
	after := pkiTestFiles(t, dir)
	if len(before) != len(after) {
		t.Fatalf("files changed: %v -> %v", pkiTestNames(before), pkiTestNames(after))
	}
	for name, data := range before {
		if !bytes.Equal(data, after[name]) {
			t.Errorf("%s changed on restart", name)
		}
	}
	if first.AdminToken != second.AdminToken || first.NodeToken != second.NodeToken ||
		!first.SigningKey.Equal(second.SigningKey) || !first.CACert.Equal(second.CACert) ||
		!first.ServingCert.Leaf.Equal(second.ServingCert.Leaf) {
		t.Error("restart returned other credentials")
	}

	// Asking for fewer names than the certificate has reuses it too.
	fewer := opts
	fewer.ExtraSANs = nil
	pkiTestEnsure(t, dir, fewer)
	if got, _ := os.ReadFile(first.Paths.ServerCert); !bytes.Equal(got, before["tls/server.crt"]) {
		t.Error("serving certificate reissued for a subset of its names")
	}
}

func TestPKIRenewsServingCertNearExpiry(t *testing.T) {
	dir := t.TempDir()
	opts, clk := pkiTestOptions()
	first := pkiTestEnsure(t, dir, opts)
	before := pkiTestFiles(t, dir)

	clk.SetTime(clk.Now().Add(pki.ServingCertLifetime - pki.ServingCertRenewBefore + time.Hour))
	second := pkiTestEnsure(t, dir, opts)
	after := pkiTestFiles(t, dir)
	for _, name := range []string{"tls/ca.crt", "tls/ca.key", "admin-token", "node-token", "sa.key", "admin.kubeconfig"} {
		if !bytes.Equal(before[name], after[name]) {
			t.Errorf("%s changed when only the serving certificate should", name)
		}
	}
	if bytes.Equal(before["tls/server.crt"], after["tls/server.crt"]) || bytes.Equal(before["tls/server.key"], after["tls/server.key"]) {
		t.Fatal("serving certificate not renewed")
	}
	if !second.ServingCert.Leaf.NotAfter.After(first.ServingCert.Leaf.NotAfter) {
		t.Error("renewed certificate does not outlive the old one")
	}
	if _, err := second.ServingCert.Leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: first.CAPool, CurrentTime: clk.Now()}); err != nil {
		t.Errorf("renewed certificate does not chain to the old CA: %v", err)
	}
}

func TestPKIReissuesForNewNames(t *testing.T) {
	dir := t.TempDir()
	opts, _ := pkiTestOptions()
	first := pkiTestEnsure(t, dir, opts)
	more := opts
	more.ExtraSANs = append([]string{"api.example.org", "198.51.100.7"}, opts.ExtraSANs...)
	second := pkiTestEnsure(t, dir, more)
	if second.ServingCert.Leaf.Equal(first.ServingCert.Leaf) {
		t.Fatal("serving certificate kept though it lacks new names")
	}
	if !second.CACert.Equal(first.CACert) {
		t.Error("CA replaced")
	}
	for _, san := range append([]string{"api.example.org", "198.51.100.7"}, pkiTestSANs...) {
		if _, err := second.ServingCert.Leaf.Verify(x509.VerifyOptions{DNSName: san, Roots: first.CAPool}); err != nil {
			t.Errorf("SAN %s: %v", san, err)
		}
	}
}

func TestPKIRepairsServingPair(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, p pki.Paths){
		"garbage certificate": func(t *testing.T, p pki.Paths) {
			pkiTestWrite(t, p.ServerCert, []byte("garbage"))
		},
		"key of another pair": func(t *testing.T, p pki.Paths) {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			der, _ := x509.MarshalPKCS8PrivateKey(k)
			pkiTestWrite(t, p.ServerKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		},
		"missing key": func(t *testing.T, p pki.Paths) {
			if err := os.Remove(p.ServerKey); err != nil {
				t.Fatal(err)
			}
		},
		"CA certificate in place of the serving one": func(t *testing.T, p pki.Paths) {
			ca, _ := os.ReadFile(p.CACert)
			pkiTestWrite(t, p.ServerCert, ca)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			opts, _ := pkiTestOptions()
			first := pkiTestEnsure(t, dir, opts)
			damage(t, first.Paths)
			second := pkiTestEnsure(t, dir, opts)
			if _, err := second.ServingCert.Leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: first.CAPool}); err != nil {
				t.Errorf("repaired certificate: %v", err)
			}
			if _, err := tls.LoadX509KeyPair(first.Paths.ServerCert, first.Paths.ServerKey); err != nil {
				t.Errorf("pair on disk: %v", err)
			}
		})
	}
}

func pkiTestWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestPKICAKeyLossIsAnError(t *testing.T) {
	dir := t.TempDir()
	opts, _ := pkiTestOptions()
	first := pkiTestEnsure(t, dir, opts)
	if err := os.Remove(first.Paths.CAKey); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.EnsureCredentials(dir, opts); err == nil || !strings.Contains(err.Error(), "ca.key") {
		t.Fatalf("CA certificate without key: %v", err)
	}
}

func TestPKICAKeyWithoutCertificateKeepsKey(t *testing.T) {
	dir := t.TempDir()
	opts, clk := pkiTestOptions()
	first := pkiTestEnsure(t, dir, opts)
	keyBefore, _ := os.ReadFile(first.Paths.CAKey)
	if err := os.Remove(first.Paths.CACert); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	second := pkiTestEnsure(t, dir, opts)
	if keyAfter, _ := os.ReadFile(first.Paths.CAKey); !bytes.Equal(keyBefore, keyAfter) {
		t.Error("CA key replaced")
	}
	if !bytes.Equal(second.CACert.RawSubjectPublicKeyInfo, first.CACert.RawSubjectPublicKeyInfo) {
		t.Error("new CA certificate is for another key")
	}
	if _, err := second.ServingCert.Leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: second.CAPool, CurrentTime: clk.Now()}); err != nil {
		t.Errorf("serving certificate under the new CA certificate: %v", err)
	}
}

func TestPKIExpiredCAIsAnError(t *testing.T) {
	dir := t.TempDir()
	opts, clk := pkiTestOptions()
	pkiTestEnsure(t, dir, opts)
	clk.SetTime(clk.Now().Add(pki.CALifetime + time.Hour))
	if _, err := pki.EnsureCredentials(dir, opts); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired CA: %v", err)
	}
}

func TestPKIDefaultServerURL(t *testing.T) {
	for listen, want := range map[string]string{
		"":                 "https://127.0.0.1:6443",
		":6443":            "https://127.0.0.1:6443",
		"0.0.0.0:7443":     "https://127.0.0.1:7443",
		"[::]:6443":        "https://127.0.0.1:6443",
		"10.0.0.5:6443":    "https://10.0.0.5:6443",
		"[fd00::5]:6443":   "https://[fd00::5]:6443",
		"api.example:6443": "https://api.example:6443",
	} {
		opts, _ := pkiTestOptions()
		opts.Listen = listen
		c := pkiTestEnsure(t, t.TempDir(), opts)
		if c.ServerURL != want {
			t.Errorf("listen %q: server %q, want %q", listen, c.ServerURL, want)
		}
		u, err := url.Parse(want)
		if err != nil {
			t.Fatal(err)
		}
		host := u.Hostname()
		if _, err := c.ServingCert.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: c.CAPool}); err != nil {
			t.Errorf("listen %q: certificate does not cover %s: %v", listen, host, err)
		}
	}
	opts, _ := pkiTestOptions()
	opts.Listen = "no-port"
	if _, err := pki.EnsureCredentials(t.TempDir(), opts); err == nil {
		t.Error("accepted a listen address without a port")
	}
}

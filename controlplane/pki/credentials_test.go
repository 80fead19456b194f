package pki_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/berth-dev/berth/controlplane/pki"
)

func TestPKISecretsTokensAreRandomHex(t *testing.T) {
	opts, _ := pkiTestOptions()
	a := pkiTestEnsure(t, t.TempDir(), opts)
	b := pkiTestEnsure(t, t.TempDir(), opts)
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, tok := range []string{a.AdminToken, a.NodeToken, b.AdminToken, b.NodeToken} {
		if !hex64.MatchString(tok) {
			t.Errorf("token %q is not 32 random bytes in hex", tok)
		}
	}
	if a.AdminToken == b.AdminToken || a.NodeToken == b.NodeToken {
		t.Error("two data dirs got the same token")
	}
}

func TestPKISecretsOperatorTokensAreKept(t *testing.T) {
	dir := t.TempDir()
	p := pki.PathsIn(dir)
	if err := os.WriteFile(p.NodeToken, []byte("  my-cluster-secret\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	opts, _ := pkiTestOptions()
	c := pkiTestEnsure(t, dir, opts)
	if c.NodeToken != "my-cluster-secret" {
		t.Errorf("node token %q", c.NodeToken)
	}
	// A secret someone left group-readable is narrowed to 0600.
	if got := pkiTestMode(t, p.NodeToken); got != 0o600 {
		t.Errorf("node-token mode %v", got)
	}
}

func TestPKISecretsEmptyTokenFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	p := pki.PathsIn(dir)
	if err := os.WriteFile(p.AdminToken, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, _ := pkiTestOptions()
	if _, err := pki.EnsureCredentials(dir, opts); err == nil || !strings.Contains(err.Error(), "admin-token") {
		t.Fatalf("empty admin-token: %v", err)
	}
}

func TestPKISecretsWidenedModesAreNarrowed(t *testing.T) {
	dir := t.TempDir()
	opts, _ := pkiTestOptions()
	c := pkiTestEnsure(t, dir, opts)
	p := c.Paths
	for _, f := range []string{p.AdminToken, p.SAKey, p.CAKey, p.ServerKey, p.AdminKubeconfig} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(p.TLSDir, 0o755); err != nil {
		t.Fatal(err)
	}
	pkiTestEnsure(t, dir, opts)
	for _, f := range []string{p.AdminToken, p.SAKey, p.CAKey, p.ServerKey, p.AdminKubeconfig} {
		if got := pkiTestMode(t, f); got != 0o600 {
			t.Errorf("%s: mode %v after restart", filepath.Base(f), got)
		}
	}
	if got := pkiTestMode(t, p.TLSDir); got != 0o700 {
		t.Errorf("tls dir mode %v", got)
	}
}

func TestPKISecretsSigningKeyFormats(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// SEC 1 ("EC PRIVATE KEY"), as openssl ecparam writes it.
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pkiTestWrite(t, pki.PathsIn(dir).SAKey, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	opts, _ := pkiTestOptions()
	c := pkiTestEnsure(t, dir, opts)
	if !c.SigningKey.Equal(key) {
		t.Error("SEC 1 signing key not used")
	}

	// A key berth cannot sign ES256 with is refused, not replaced.
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ = x509.MarshalPKCS8PrivateKey(p384)
	dir = t.TempDir()
	pkiTestWrite(t, pki.PathsIn(dir).SAKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if _, err := pki.EnsureCredentials(dir, opts); err == nil || !strings.Contains(err.Error(), "P-256") {
		t.Errorf("P-384 signing key: %v", err)
	}

	dir = t.TempDir()
	pkiTestWrite(t, pki.PathsIn(dir).SAKey, []byte("not pem"))
	if _, err := pki.EnsureCredentials(dir, opts); err == nil {
		t.Error("garbage signing key accepted")
	}
}

func TestPKISecretsSigningKeyOnDiskMatches(t *testing.T) {
	opts, _ := pkiTestOptions()
	c := pkiTestEnsure(t, t.TempDir(), opts)
	data, err := os.ReadFile(c.Paths.SAKey)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("sa.key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !c.SigningKey.Equal(k) {
		t.Error("sa.key differs from the returned key")
	}
}

func TestPKISecretsNoDataDir(t *testing.T) {
	if _, err := pki.EnsureCredentials("", pki.Options{}); err == nil {
		t.Error("empty data dir accepted")
	}
}

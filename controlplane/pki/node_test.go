package pki_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/controlplane/pki"
)

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("no PEM block in %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestNodeCertIssuer(t *testing.T) {
	opts, clk := pkiTestOptions()
	creds := pkiTestEnsure(t, t.TempDir(), opts)
	issuer, err := pki.NewNodeCertIssuer(creds, clk)
	if err != nil {
		t.Fatal(err)
	}
	addrs := []string{"10.0.0.5", "N1", "[2001:db8::2]"}
	certPEM, keyPEM, err := issuer.Issue("n1", addrs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatalf("certificate and key do not belong together: %v", err)
	}
	cert := parseCert(t, certPEM)
	if cert.Subject.CommonName != "system:node:n1" {
		t.Errorf("CN %q, want system:node:n1", cert.Subject.CommonName)
	}
	if life := cert.NotAfter.Sub(clk.Now()); life < 364*24*time.Hour || life > 366*24*time.Hour {
		t.Errorf("valid for %s more, want a year", life)
	}
	for _, name := range []string{"10.0.0.5", "n1", "2001:db8::2"} {
		_, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: creds.NodeCAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil {
			t.Errorf("not valid for %s: %v", name, err)
		}
	}
	for _, name := range []string{"10.0.0.6", "n2.example.com", "localhost"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: creds.NodeCAPool}); err == nil {
			t.Errorf("valid for %s, which the join did not name", name)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: creds.NodeCAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a node's serving certificate is valid as a client certificate")
	}
	// The CA that API clients trust for the server signs no node's
	// certificate: whatever a join names, it cannot pass for the server.
	if _, err := cert.Verify(x509.VerifyOptions{Roots: creds.CAPool}); err == nil {
		t.Error("a node's serving certificate chains to the cluster CA")
	}
	again, _, err := issuer.Issue("n1", addrs)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again, certPEM) {
		t.Error("a second join got the same certificate")
	}
}

func TestNodeCertIssuerRefusals(t *testing.T) {
	opts, clk := pkiTestOptions()
	creds := pkiTestEnsure(t, t.TempDir(), opts)
	issuer, err := pki.NewNodeCertIssuer(creds, clk)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]string, 33)
	for i := range many {
		many[i] = fmt.Sprintf("10.0.0.%d", i)
	}
	for _, tc := range []struct {
		name  string
		addrs []string
		want  string
	}{
		{"not a name", []string{"10.0.0.1", "bad_name!"}, `"bad_name!" is neither`},
		// A node's certificate names the node and its IP addresses, never
		// another name, least of all one of the API server's.
		{"another name", []string{"10.0.0.1", "db.example.com"}, `"db.example.com" is not the node's name`},
		{"the server's name", []string{"berth.example.com"}, `"berth.example.com" is not the node's name`},
		{"another node's name", []string{"n2"}, `"n2" is not the node's name`},
		{"localhost", []string{"localhost"}, `"localhost" is not the node's name`},
		{"unspecified", []string{"0.0.0.0"}, `"0.0.0.0"`},
		{"multicast", []string{"224.0.0.1"}, `"224.0.0.1"`},
		{"blank", []string{" "}, `address "" is neither`},
		{"none", nil, "no addresses"},
		{"too many", many, "at most 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := issuer.Issue("n1", tc.addrs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestAPIServerClientCert(t *testing.T) {
	dir := t.TempDir()
	opts, clk := pkiTestOptions()
	creds := pkiTestEnsure(t, dir, opts)
	first, err := pki.EnsureAPIServerClientCert(creds, clk)
	if err != nil {
		t.Fatal(err)
	}
	leaf := first.Leaf
	if leaf.Subject.CommonName != api.APIServerClientName {
		t.Errorf("CN %q, want %q", leaf.Subject.CommonName, api.APIServerClientName)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: creds.CAPool, CurrentTime: clk.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("not a client certificate of the CA: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "tls", "apiserver-client.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}

	// A restart reuses it.
	creds = pkiTestEnsure(t, dir, opts)
	second, err := pki.EnsureAPIServerClientCert(creds, clk)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(second.Certificate[0], first.Certificate[0]) {
		t.Error("a restart issued a new client certificate")
	}

	// Near its expiry it is replaced, under the same CA.
	later := clocktesting.NewFakePassiveClock(clk.Now().Add(pki.ServingCertLifetime - pki.ServingCertRenewBefore + time.Hour))
	opts.Clock = later
	creds = pkiTestEnsure(t, dir, opts)
	renewed, err := pki.EnsureAPIServerClientCert(creds, later)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(renewed.Certificate[0], first.Certificate[0]) {
		t.Error("a client certificate near expiry was kept")
	}
	if _, err := renewed.Leaf.Verify(x509.VerifyOptions{Roots: creds.CAPool, CurrentTime: later.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("renewed certificate: %v", err)
	}

	// A new CA gets a new client certificate.
	for _, f := range []string{"ca.crt", "ca.key", "server.crt", "server.key"} {
		if err := os.Remove(filepath.Join(dir, "tls", f)); err != nil {
			t.Fatal(err)
		}
	}
	opts.Clock = clk
	creds = pkiTestEnsure(t, dir, opts)
	newCA, err := pki.EnsureAPIServerClientCert(creds, clk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newCA.Leaf.Verify(x509.VerifyOptions{Roots: creds.CAPool, CurrentTime: clk.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("after the CA changed: %v", err)
	}
}

// TestNodeCertIssuerServerNamedNode: a node named as one of the API
// server's names (other than the machine's host name, which an agent on
// the server's machine goes by) gets no certificate for it.
func TestNodeCertIssuerServerNamedNode(t *testing.T) {
	opts, clk := pkiTestOptions()
	creds := pkiTestEnsure(t, t.TempDir(), opts)
	issuer, err := pki.NewNodeCertIssuer(creds, clk)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"localhost", "berth.example.com"} {
		if _, _, err := issuer.Issue(node, []string{"10.0.0.9", node}); err == nil || !strings.Contains(err.Error(), "API server") {
			t.Errorf("node %s: %v, want a refusal naming the API server", node, err)
		}
	}
	if _, _, err := issuer.Issue("berth-host", []string{"10.1.2.3", "berth-host"}); err != nil {
		t.Errorf("the node on the server's machine: %v", err)
	}
}

// TestNodeCAOfAnOlderDataDir: a data dir made before the node CA existed
// gets one at start, kept across restarts, apart from the cluster CA.
func TestNodeCAOfAnOlderDataDir(t *testing.T) {
	opts, _ := pkiTestOptions()
	dir := t.TempDir()
	first := pkiTestEnsure(t, dir, opts)
	p := pki.PathsIn(dir)
	for _, f := range []string{p.NodeCACert, p.NodeCAKey} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	again := pkiTestEnsure(t, dir, opts)
	if again.NodeCACert == nil || again.NodeCACert.Equal(first.NodeCACert) || again.NodeCACert.Equal(again.CACert) {
		t.Fatal("no new node CA, or the cluster CA as node CA")
	}
	if !again.CACert.Equal(first.CACert) {
		t.Error("the cluster CA changed")
	}
	if st, err := os.Stat(p.NodeCAKey); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("node CA key: %v %v", st, err)
	}
	third := pkiTestEnsure(t, dir, opts)
	if !third.NodeCACert.Equal(again.NodeCACert) {
		t.Error("the node CA changed across a restart")
	}
}

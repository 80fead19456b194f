package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/atomicfile"
)

// Certificate lifetimes. The CA outlives every agent's copy of it; the
// serving certificate is renewed at start-up once it enters its renewal
// window, keeping the CA, so agents need not be touched.
const (
	CALifetime          = 10 * 365 * 24 * time.Hour
	ServingCertLifetime = 365 * 24 * time.Hour
	// ServingCertRenewBefore is how close to expiry a serving certificate
	// is replaced at start-up.
	ServingCertRenewBefore = 30 * 24 * time.Hour
	// certBackdate absorbs clock skew between the server and its clients.
	certBackdate = time.Hour
)

// PEM block types.
const (
	pemCertificate = "CERTIFICATE"
	pemPrivateKey  = "PRIVATE KEY"
	pemECKey       = "EC PRIVATE KEY"
)

// SANs are the names a serving certificate must be valid for.
type SANs struct {
	DNSNames []string
	IPs      []net.IP
}

// Add records one DNS name or IP address (brackets around IPv6 are
// dropped) unless it is already there.
func (s *SANs) Add(name string) {
	name = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(name), "["), "]")
	if name == "" {
		return
	}
	if ip := net.ParseIP(name); ip != nil {
		if !slices.ContainsFunc(s.IPs, ip.Equal) {
			s.IPs = append(s.IPs, ip)
		}
		return
	}
	name = strings.ToLower(name)
	if !slices.Contains(s.DNSNames, name) {
		s.DNSNames = append(s.DNSNames, name)
	}
}

// All lists every name, DNS names first, as strings.
func (s *SANs) All() []string {
	out := slices.Clone(s.DNSNames)
	for _, ip := range s.IPs {
		out = append(out, ip.String())
	}
	return out
}

// coveredBy reports whether cert is valid for every name.
func (s *SANs) coveredBy(cert *x509.Certificate) bool {
	for _, n := range s.DNSNames {
		if !slices.Contains(cert.DNSNames, n) {
			return false
		}
	}
	for _, ip := range s.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// servingSANs are the names the serving certificate covers: the listen
// address's host when it names one, the loopback names, the hostname, and
// the extra names (a node IP, a load balancer's name) the caller passes.
func servingSANs(listen, hostname string, extra []string) SANs {
	var s SANs
	if host, _, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			s.Add(host)
		}
	}
	s.Add("localhost")
	s.Add("127.0.0.1")
	s.Add("::1")
	s.Add(hostname)
	for _, e := range extra {
		s.Add(e)
	}
	return s
}

// The CAs of a data dir, by the prefix of their common names.
const (
	// clusterCAName is the cluster CA's: it signs the API server's serving
	// certificate and its client certificate to agents; agents and
	// kubeconfigs trust it.
	clusterCAName = "berth-ca"
	// nodeCAName is the node CA's: it signs agents' serving certificates,
	// which only the API server trusts (as kubelet serving certificates
	// have a CA of their own in kubeadm).
	nodeCAName = "berth-node-ca"
)

// certAuthority is a CA of the data dir, its key included.
type certAuthority struct {
	cert *x509.Certificate
	pem  []byte
	key  crypto.Signer
}

// ensureCA loads the CA, or creates it on first start. A CA certificate
// without its key is an error rather than a reason to make a new CA,
// because agents and kubeconfigs elsewhere still trust the old one. A key
// without its certificate (a crash between the two writes) gets a new
// certificate for the same key.
func ensureCA(certPath, keyPath, name string, now time.Time) (*certAuthority, error) {
	certPEM, certErr := os.ReadFile(certPath)
	key, keyErr := loadPrivateKey(keyPath)
	switch {
	case certErr == nil && keyErr == nil:
		cert, err := parseCertPEM(certPEM)
		if err != nil {
			return nil, fmt.Errorf("load CA %s: %w", certPath, err)
		}
		if !cert.IsCA || !publicKeysEqual(cert.PublicKey, key.Public()) {
			return nil, fmt.Errorf("load CA: %s is not a CA certificate for the key in %s", certPath, keyPath)
		}
		if !now.Before(cert.NotAfter) {
			return nil, fmt.Errorf("load CA: %s expired at %s; remove %s and %s to create a new CA (agents must then trust the new one)",
				certPath, cert.NotAfter.Format(time.RFC3339), certPath, keyPath)
		}
		return &certAuthority{cert: cert, pem: certPEM, key: key}, nil
	case certErr == nil && errors.Is(keyErr, fs.ErrNotExist):
		return nil, fmt.Errorf("load CA: %s exists but its key %s does not", certPath, keyPath)
	case certErr != nil && !errors.Is(certErr, fs.ErrNotExist):
		return nil, fmt.Errorf("load CA: %w", certErr)
	case keyErr != nil && !errors.Is(keyErr, fs.ErrNotExist):
		return nil, fmt.Errorf("load CA: %w", keyErr)
	}

	if key == nil {
		k, err := newECKey()
		if err != nil {
			return nil, err
		}
		if err := writePrivateKey(keyPath, k); err != nil {
			return nil, err
		}
		key = k
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", name, now.Unix())},
		NotBefore:             now.Add(-certBackdate),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})
	if err := atomicfile.WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return &certAuthority{cert: cert, pem: certPEM, key: key}, nil
}

// ensureServingCert returns the serving certificate, reusing the one on
// disk while it chains to the CA, matches its key, covers every wanted
// name and is not about to expire; otherwise it issues a new one.
func ensureServingCert(p Paths, ca *certAuthority, want SANs, now time.Time) (tls.Certificate, error) {
	if cert, ok := loadServingCert(p, ca, want, now); ok {
		return cert, nil
	}
	key, err := newECKey()
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := randomSerial()
	if err != nil {
		return tls.Certificate{}, err
	}
	cn := "berth"
	if len(want.DNSNames) > 0 {
		cn = want.DNSNames[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-certBackdate),
		NotAfter:     now.Add(ServingCertLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     want.DNSNames,
		IPAddresses:  want.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("create serving certificate: %w", err)
	}
	// Key first: a crash before the certificate is written leaves a pair
	// that does not match, which the next start replaces.
	if err := writePrivateKey(p.ServerKey, key); err != nil {
		return tls.Certificate{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})
	if err := atomicfile.WriteFile(p.ServerCert, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return loadKeyPair(p)
}

func loadServingCert(p Paths, ca *certAuthority, want SANs, now time.Time) (tls.Certificate, bool) {
	if err := tightenMode(p.ServerKey, 0o600); err != nil {
		return tls.Certificate{}, false
	}
	cert, err := loadKeyPair(p)
	if err != nil {
		return tls.Certificate{}, false
	}
	leaf := cert.Leaf
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil || leaf.NotAfter.Sub(now) < ServingCertRenewBefore || !want.coveredBy(leaf) {
		return tls.Certificate{}, false
	}
	return cert, true
}

func loadKeyPair(p Paths) (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(p.ServerCert, p.ServerKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("load serving certificate: %w", err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return tls.Certificate{}, fmt.Errorf("load serving certificate: %w", err)
		}
	}
	return cert, nil
}

func newECKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return k, nil
}

func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certificate serial: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// writePrivateKey writes an ECDSA key as a PKCS #8 PEM file, mode 0600.
func writePrivateKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode key %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), 0o600)
}

// loadPrivateKey reads an ECDSA P-256 key in PKCS #8 or SEC 1 PEM, and
// narrows the file's mode to 0600 if someone widened it. A missing file
// yields an error wrapping fs.ErrNotExist.
func loadPrivateKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := tightenMode(path, 0o600); err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("load key %s: no PEM block", path)
	}
	var key any
	switch block.Type {
	case pemPrivateKey:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case pemECKey:
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("load key %s: unexpected PEM block %q", path, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("load key %s: %w", path, err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("load key %s: want an ECDSA P-256 key, have %T", path, key)
	}
	return ec, nil
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != pemCertificate {
		return nil, errors.New("no CERTIFICATE PEM block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	da, errA := x509.MarshalPKIXPublicKey(a)
	db, errB := x509.MarshalPKIXPublicKey(b)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

package pki

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/internal/atomicfile"
)

// Files of the API server's client certificate in the data dir's tls/.
const (
	apiServerClientCertFile = "apiserver-client.crt"
	apiServerClientKeyFile  = "apiserver-client.key"
)

// maxNodeAddresses caps the addresses one join may ask a certificate for:
// a node has a few IPs and names, not hundreds.
const maxNodeAddresses = 32

// nodeCertOrganization is the group of node identities, as the kubelet's
// certificates carry it.
const nodeCertOrganization = "system:nodes"

// NodeCertIssuer signs agents' serving certificates at join with the node
// CA, so that the API server can verify the agent it fetches logs from.
// The node CA is not the cluster CA that API clients trust: a join-token
// holder gets no certificate that passes for the API server, whatever it
// asks for. It loads the node CA key from the data dir once.
type NodeCertIssuer struct {
	ca    *certAuthority
	clock clock.PassiveClock
	// server are the API server's DNS names, which no node's
	// certificate carries; hostname, the machine's, is exempt, since an
	// agent on the server's machine goes by it.
	server   SANs
	hostname string
}

// NewNodeCertIssuer loads the node CA of creds (key included) for signing.
func NewNodeCertIssuer(creds *Credentials, clk clock.PassiveClock) (*NodeCertIssuer, error) {
	ca, err := loadCA(creds.Paths.NodeCACert, creds.Paths.NodeCAKey, creds.NodeCACert)
	if err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &NodeCertIssuer{ca: ca, clock: clk, server: creds.SANs, hostname: strings.ToLower(creds.Hostname)}, nil
}

// loadCAOf reads the cluster CA key beside creds' CA certificate.
func loadCAOf(creds *Credentials) (*certAuthority, error) {
	return loadCA(creds.Paths.CACert, creds.Paths.CAKey, creds.CACert)
}

// loadCA reads a CA's key and checks that it belongs to cert.
func loadCA(certPath, keyPath string, cert *x509.Certificate) (*certAuthority, error) {
	if cert == nil {
		return nil, fmt.Errorf("load CA: no certificate %s", certPath)
	}
	key, err := loadPrivateKey(keyPath)
	if err != nil {
		return nil, fmt.Errorf("load CA key: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("load CA key: %s does not match %s", keyPath, certPath)
	}
	return &certAuthority{cert: cert, pem: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: cert.Raw}), key: key}, nil
}

// Issue is the API server's ServingCertIssuer: it signs, with a new EC
// key made here and returned once, a certificate for node (CN
// system:node:<node>) valid as a TLS server for its addresses: IP
// addresses, and of DNS names only the node's own (see nodeSANs).
func (i *NodeCertIssuer) Issue(node string, addresses []string) (certPEM, keyPEM []byte, err error) {
	sans, err := i.nodeSANs(node, addresses)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + node, Organization: []string{nodeCertOrganization}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    sans.DNSNames,
		IPAddresses: sans.IPs,
	}
	cert, key, err := i.ca.sign(tmpl, i.clock.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: %w", node, err)
	}
	return cert, key, nil
}

// nodeSANs checks the addresses of a join: at most maxNodeAddresses, each
// a unicast IP address or the node's own name (a node is entitled to no
// other name), which must not be one of the API server's names.
func (i *NodeCertIssuer) nodeSANs(node string, addresses []string) (SANs, error) {
	var s SANs
	if len(addresses) > maxNodeAddresses {
		return s, fmt.Errorf("%d addresses, at most %d", len(addresses), maxNodeAddresses)
	}
	for _, a := range addresses {
		a = strings.TrimSpace(a)
		bare := strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		if ip := net.ParseIP(bare); ip != nil {
			if ip.IsUnspecified() || ip.IsMulticast() {
				return s, fmt.Errorf("address %q is not a unicast address", a)
			}
			s.Add(a)
			continue
		}
		if errs := validation.IsDNS1123Subdomain(strings.ToLower(a)); len(errs) > 0 {
			return s, fmt.Errorf("address %q is neither an IP address nor a DNS name: %s", a, strings.Join(errs, "; "))
		}
		name := strings.ToLower(a)
		if name != strings.ToLower(node) {
			return s, fmt.Errorf("address %q is not the node's name (%s): a node's serving certificate names only the node and its IP addresses", a, node)
		}
		if slices.Contains(i.server.DNSNames, name) && name != i.hostname {
			return s, fmt.Errorf("node name %q is a name of the API server: give the node another name", node)
		}
		s.Add(a)
	}
	if len(s.DNSNames)+len(s.IPs) == 0 {
		return s, fmt.Errorf("no addresses")
	}
	return s, nil
}

// sign issues a certificate from tmpl (subject, usages and names) for a
// new EC key, valid for ServingCertLifetime from now, and returns the
// certificate and the key in PEM.
func (ca *certAuthority) sign(tmpl *x509.Certificate, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := newECKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-certBackdate)
	tmpl.NotAfter = now.Add(ServingCertLifetime)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: keyDER}), nil
}

// EnsureAPIServerClientCert returns the client certificate the API server
// presents to agents (CN api.APIServerClientName), kept in the data dir's
// tls/ beside the serving certificate. The one on disk is reused while it
// chains to the current CA, names the API server and is not within
// ServingCertRenewBefore of expiry; otherwise a new one is issued.
func EnsureAPIServerClientCert(creds *Credentials, clk clock.PassiveClock) (tls.Certificate, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	now := clk.Now()
	certPath := filepath.Join(creds.Paths.TLSDir, apiServerClientCertFile)
	keyPath := filepath.Join(creds.Paths.TLSDir, apiServerClientKeyFile)
	if cert, err := loadClientCert(certPath, keyPath, creds.CAPool, now); err == nil {
		return cert, nil
	}
	ca, err := loadCAOf(creds)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPEM, keyPEM, err := ca.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: api.APIServerClientName},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now)
	if err != nil {
		return tls.Certificate{}, err
	}
	// Key first, as for the serving certificate: a crash in between leaves
	// a pair that does not match, which the next start replaces.
	if err := atomicfile.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := atomicfile.WriteFile(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return loadClientCert(certPath, keyPath, creds.CAPool, now)
}

// loadClientCert reads the API server's client certificate and checks it
// is still good for use with the CA in roots.
func loadClientCert(certPath, keyPath string, roots *x509.CertPool, now time.Time) (tls.Certificate, error) {
	if err := tightenMode(keyPath, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("load API server client certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("load API server client certificate: %w", err)
	}
	cert.Leaf = leaf
	if leaf.Subject.CommonName != api.APIServerClientName {
		return tls.Certificate{}, fmt.Errorf("API server client certificate names %q", leaf.Subject.CommonName)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return tls.Certificate{}, fmt.Errorf("API server client certificate: %w", err)
	}
	if leaf.NotAfter.Sub(now) < ServingCertRenewBefore {
		return tls.Certificate{}, fmt.Errorf("API server client certificate expires at %s", leaf.NotAfter)
	}
	return cert, nil
}

package pki

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/atomicfile"
)

// Paths are where the server keeps its credentials in the data
// dir (SPEC §2). Users and scripts read some of them: admin.kubeconfig for
// kubectl, node-token and tls/ca.crt for joining agents.
type Paths struct {
	Dir             string
	TLSDir          string
	CACert          string
	CAKey           string
	NodeCACert      string
	NodeCAKey       string
	ServerCert      string
	ServerKey       string
	AdminToken      string
	NodeToken       string
	SAKey           string
	AdminKubeconfig string
}

// PathsIn returns the credential paths of a data dir.
func PathsIn(dataDir string) Paths {
	tlsDir := filepath.Join(dataDir, "tls")
	return Paths{
		Dir:             dataDir,
		TLSDir:          tlsDir,
		CACert:          filepath.Join(tlsDir, "ca.crt"),
		CAKey:           filepath.Join(tlsDir, "ca.key"),
		NodeCACert:      filepath.Join(tlsDir, "node-ca.crt"),
		NodeCAKey:       filepath.Join(tlsDir, "node-ca.key"),
		ServerCert:      filepath.Join(tlsDir, "server.crt"),
		ServerKey:       filepath.Join(tlsDir, "server.key"),
		AdminToken:      filepath.Join(dataDir, "admin-token"),
		NodeToken:       filepath.Join(dataDir, "node-token"),
		SAKey:           filepath.Join(dataDir, "sa.key"),
		AdminKubeconfig: filepath.Join(dataDir, "admin.kubeconfig"),
	}
}

// Options say what the serving certificate and admin kubeconfig must
// fit. The zero value suits a server listening on :6443 on this machine.
type Options struct {
	// Listen is the --listen address (default ":6443"). A specific host in
	// it goes into the certificate and the kubeconfig.
	Listen string
	// ServerURL is the API URL written into admin.kubeconfig; by default
	// https://<listen host, or 127.0.0.1 when unspecified>:<listen port>.
	ServerURL string
	// Servers are further URLs admin.kubeconfig lists for berth (see
	// client.ServersExtension), tried after ServerURL.
	Servers []string
	// Hostname goes into the certificate; defaults to os.Hostname().
	Hostname string
	// ExtraSANs are further DNS names or IP addresses the certificate must
	// cover, such as the node IP that remote agents dial.
	ExtraSANs []string
	// Clock dates certificates; tests pass a fake one.
	Clock clock.PassiveClock
}

// Credentials are what EnsureCredentials found or created: everything the
// API server needs to serve TLS, authenticate and sign tokens.
type Credentials struct {
	Paths Paths
	// CACert and CAPEM are the cluster CA, which agents and kubeconfigs
	// trust; CAPool holds it for TLS clients.
	CACert *x509.Certificate
	CAPEM  []byte
	CAPool *x509.CertPool
	// NodeCACert is the node CA, which signs agents' serving
	// certificates and nothing else; NodeCAPool holds it for the API
	// server's connections to agents. No API client trusts it, so no
	// certificate a join obtains can pass for the API server.
	NodeCACert *x509.Certificate
	NodeCAPool *x509.CertPool
	// ServingCert is the API server's certificate, with Leaf set.
	ServingCert tls.Certificate
	// SANs are the names ServingCert was required to cover.
	SANs SANs
	// Hostname is the machine's host name, one of SANs.
	Hostname string
	// AdminToken is the bearer token of the admin identity.
	AdminToken string
	// NodeToken is the join token agents trade for node credentials.
	NodeToken string
	// SigningKey signs service-account tokens and node credentials.
	SigningKey *ecdsa.PrivateKey
	// ServerURL is the server written into admin.kubeconfig.
	ServerURL string
}

// EnsureCredentials makes sure the data dir holds the server's credentials
// and returns them: on first start it creates the CA, the serving
// certificate, the admin and node tokens, the service-account signing key
// and admin.kubeconfig; later starts reuse every file unchanged, except a
// serving certificate near expiry or missing a wanted name (reissued under
// the same CA) and a kubeconfig whose server, CA or token changed.
// Secrets are written atomically with mode 0600 in directories of 0700.
func EnsureCredentials(dataDir string, opts Options) (*Credentials, error) {
	if dataDir == "" {
		return nil, errors.New("credentials: no data dir")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Listen == "" {
		opts.Listen = ":6443"
	}
	if opts.Hostname == "" {
		opts.Hostname, _ = os.Hostname()
	}
	serverURL := opts.ServerURL
	if serverURL == "" {
		u, err := DefaultServerURL(opts.Listen)
		if err != nil {
			return nil, err
		}
		serverURL = u
	}

	p := PathsIn(dataDir)
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if err := EnsurePrivateDir(p.TLSDir); err != nil {
		return nil, err
	}
	now := opts.Clock.Now()
	ca, err := ensureCA(p.CACert, p.CAKey, clusterCAName, now)
	if err != nil {
		return nil, err
	}
	// A data dir made before the node CA existed gets one now; agents
	// get certificates of it when they next join (at start or renewal).
	nodeCA, err := ensureCA(p.NodeCACert, p.NodeCAKey, nodeCAName, now)
	if err != nil {
		return nil, err
	}
	sans := servingSANs(opts.Listen, opts.Hostname, opts.ExtraSANs)
	serving, err := ensureServingCert(p, ca, sans, now)
	if err != nil {
		return nil, err
	}
	adminToken, err := ensureToken(p.AdminToken)
	if err != nil {
		return nil, err
	}
	nodeToken, err := ensureToken(p.NodeToken)
	if err != nil {
		return nil, err
	}
	saKey, err := ensureSigningKey(p.SAKey)
	if err != nil {
		return nil, err
	}
	admin := NewKubeconfig(serverURL, ca.pem, adminToken)
	SetServers(admin.Clusters[KubeconfigName], opts.Servers)
	if err := writeKubeconfig(p.AdminKubeconfig, admin); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	nodePool := x509.NewCertPool()
	nodePool.AddCert(nodeCA.cert)
	return &Credentials{
		Paths:       p,
		CACert:      ca.cert,
		CAPEM:       ca.pem,
		CAPool:      pool,
		NodeCACert:  nodeCA.cert,
		NodeCAPool:  nodePool,
		ServingCert: serving,
		SANs:        sans,
		Hostname:    opts.Hostname,
		AdminToken:  adminToken,
		NodeToken:   nodeToken,
		SigningKey:  saKey,
		ServerURL:   serverURL,
	}, nil
}

// DefaultServerURL turns a listen address into the URL a client on this
// machine dials: an unspecified host becomes the loopback address.
func DefaultServerURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("credentials: listen address %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "6443"
	}
	return (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, port)}).String(), nil
}

// ensureToken reads a token file, or creates it with 32 random bytes in
// hex. An operator may put a token of their own in the file beforehand.
func ensureToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := tightenMode(path, 0o600); err != nil {
			return "", err
		}
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return "", fmt.Errorf("credentials: %s is empty; remove it to have a new token made", path)
		}
		return tok, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("credentials: %w", err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("credentials: token: %w", err)
	}
	tok := hex.EncodeToString(buf)
	if err := atomicfile.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	return tok, nil
}

// ensureSigningKey reads or creates the service-account signing key.
func ensureSigningKey(path string) (*ecdsa.PrivateKey, error) {
	key, err := loadPrivateKey(path)
	switch {
	case err == nil:
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if key, err = newECKey(); err != nil {
		return nil, err
	}
	if err := writePrivateKey(path, key); err != nil {
		return nil, err
	}
	return key, nil
}

// EnsurePrivateDir creates dir with mode 0700, or narrows it to 0700.
func EnsurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return tightenMode(dir, 0o700)
}

// tightenMode removes permission bits beyond mode, so that a secret someone
// made readable to others is not served on as if nothing happened.
func tightenMode(path string, mode fs.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	if fi.Mode().Perm()&^mode == 0 {
		return nil
	}
	if err := os.Chmod(path, fi.Mode().Perm()&mode); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return nil
}

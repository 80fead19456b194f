package client

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// Config says where the API is and how to prove who we are.
type Config struct {
	// Server is the API's base URL, as "https://10.0.0.1:6443", or the
	// URLs of several control planes of one cluster separated by commas:
	// the client sends to one of them and moves on to the next when it
	// cannot reach it, or a request there ran out of time unanswered.
	Server string
	// Spread starts the client at a server of Server's list chosen at
	// random rather than the first, so that the many clients given one
	// list (a cluster's agents) spread over the control planes, as k3s's
	// agents shuffle theirs; each still moves on when one fails.
	Spread bool
	// Token is the bearer token sent with every request.
	Token string
	// CertData and KeyData are the PEM of a client certificate and its
	// key, which authenticate the client on the TLS handshake: a user
	// of `berth token create-user`, or one the cluster's CA signed. A
	// Token, when set too, is what the server goes by.
	CertData, KeyData []byte
	// CAData is the PEM of the CA that signed the server's certificate;
	// empty trusts the system roots.
	CAData []byte
	// InsecureSkipTLSVerify trusts any server certificate: tests and
	// `--insecure-skip-tls-verify` only.
	InsecureSkipTLSVerify bool
	// Timeout bounds every request but watches (default 30s; negative:
	// none).
	Timeout time.Duration
	// Namespace is the current context's namespace in a kubeconfig, for
	// callers that default to it.
	Namespace string
	// UserAgent names the caller in the server's logs.
	UserAgent string
	// Transport, when set, is used instead of one built from the TLS
	// settings, so that many clients (hollow agents in `berth sim`) can
	// share one connection pool. The bearer token is still per client.
	Transport http.RoundTripper
	// Clock times the waits between the tries of a request the server
	// answered 503 or 429; the real clock when nil.
	Clock clock.Clock
}

// LoadKubeconfig reads a kubeconfig in kubectl's format (the one `berth
// server` writes as admin.kubeconfig) with client-go's loader, as kubectl
// reads it: relative file paths are relative to the kubeconfig.
func LoadKubeconfig(path string) (*Config, error) {
	cfg, err := FromKubeconfig(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// FromKubeconfig turns the current context of a kubeconfig that client-go
// loaded (one file, or $KUBECONFIG's list merged) into a Config: the
// cluster's server and CA (certificate-authority-data or
// certificate-authority), the user's token (token or tokenFile) or client
// certificate (client-certificate(-data) and client-key(-data)), and the
// context's namespace; the servers of the cluster's ServersExtension
// follow its server. A user with only a plugin is refused rather than
// sent unnamed: berth's client speaks no plugin.
func FromKubeconfig(cc clientcmd.ClientConfig) (*Config, error) {
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, err
	}
	servers, err := kubeconfigServers(cc)
	if err != nil {
		return nil, err
	}
	cfg := &Config{
		Server:                JoinServers(rc.Host, servers),
		Token:                 strings.TrimSpace(rc.BearerToken),
		CAData:                rc.CAData,
		InsecureSkipTLSVerify: rc.Insecure,
	}
	if cfg.Token == "" && rc.BearerTokenFile != "" {
		tok, err := os.ReadFile(rc.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("tokenFile: %w", err)
		}
		cfg.Token = strings.TrimSpace(string(tok))
	}
	if len(cfg.CAData) == 0 && rc.CAFile != "" {
		ca, err := os.ReadFile(rc.CAFile)
		if err != nil {
			return nil, fmt.Errorf("certificate-authority: %w", err)
		}
		cfg.CAData = ca
	}
	cfg.CertData, cfg.KeyData = rc.CertData, rc.KeyData
	if len(cfg.CertData) == 0 && rc.CertFile != "" {
		if cfg.CertData, err = os.ReadFile(rc.CertFile); err != nil {
			return nil, fmt.Errorf("client-certificate: %w", err)
		}
	}
	if len(cfg.KeyData) == 0 && rc.KeyFile != "" {
		if cfg.KeyData, err = os.ReadFile(rc.KeyFile); err != nil {
			return nil, fmt.Errorf("client-key: %w", err)
		}
	}
	if cfg.Token == "" && len(cfg.CertData) == 0 && (rc.ExecProvider != nil || rc.AuthProvider != nil) {
		return nil, errors.New("the current context's user authenticates with a plugin; berth authenticates with a token or a client certificate")
	}
	if ns, _, err := cc.Namespace(); err == nil {
		cfg.Namespace = ns
	}
	return cfg, nil
}

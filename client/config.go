package client

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"
)

// Config says where the API is and how to prove who we are.
type Config struct {
	// Server is the API's base URL, as "https://10.0.0.1:6443", or the
	// URLs of several control planes of one cluster separated by commas:
	// the client sends to one of them and moves on to the next when it
	// cannot reach it, or a request there ran out of time unanswered.
	Server string
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

// kubeconfig is the part of kubectl's config file berth reads.
type kubeconfig struct {
	CurrentContext string `json:"current-context"`
	Clusters       []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			CertificateAuthority     string `json:"certificate-authority"`
			CertificateAuthorityData string `json:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			Token     string `json:"token"`
			TokenFile string `json:"tokenFile"`
		} `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster   string `json:"cluster"`
			User      string `json:"user"`
			Namespace string `json:"namespace"`
		} `json:"context"`
	} `json:"contexts"`
}

// LoadKubeconfig reads a kubeconfig in kubectl's format (the one `berth
// server` writes as admin.kubeconfig): the current context's cluster
// (server, certificate-authority-data or certificate-authority) and user
// (token or tokenFile). Relative file paths are relative to the
// kubeconfig, as kubectl reads them.
func LoadKubeconfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	ctxName := kc.CurrentContext
	if ctxName == "" && len(kc.Contexts) == 1 {
		ctxName = kc.Contexts[0].Name
	}
	if ctxName == "" {
		return nil, fmt.Errorf("kubeconfig %s: no current-context", path)
	}
	cfg := &Config{}
	found := false
	var clusterName, userName string
	for _, c := range kc.Contexts {
		if c.Name == ctxName {
			clusterName, userName, cfg.Namespace = c.Context.Cluster, c.Context.User, c.Context.Namespace
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("kubeconfig %s: context %q not found", path, ctxName)
	}
	dir := filepath.Dir(path)
	resolve := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	found = false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		cfg.Server = c.Cluster.Server
		cfg.InsecureSkipTLSVerify = c.Cluster.InsecureSkipTLSVerify
		switch {
		case c.Cluster.CertificateAuthorityData != "":
			ca, err := base64.StdEncoding.DecodeString(strings.TrimSpace(c.Cluster.CertificateAuthorityData))
			if err != nil {
				return nil, fmt.Errorf("kubeconfig %s: cluster %q: certificate-authority-data: %w", path, clusterName, err)
			}
			cfg.CAData = ca
		case c.Cluster.CertificateAuthority != "":
			ca, err := os.ReadFile(resolve(c.Cluster.CertificateAuthority))
			if err != nil {
				return nil, fmt.Errorf("kubeconfig %s: cluster %q: %w", path, clusterName, err)
			}
			cfg.CAData = ca
		}
	}
	if !found {
		return nil, fmt.Errorf("kubeconfig %s: cluster %q not found", path, clusterName)
	}
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		cfg.Token = u.User.Token
		if cfg.Token == "" && u.User.TokenFile != "" {
			tok, err := os.ReadFile(resolve(u.User.TokenFile))
			if err != nil {
				return nil, fmt.Errorf("kubeconfig %s: user %q: %w", path, userName, err)
			}
			cfg.Token = strings.TrimSpace(string(tok))
		}
	}
	if cfg.Server == "" {
		return nil, fmt.Errorf("kubeconfig %s: cluster %q has no server", path, clusterName)
	}
	return cfg, nil
}

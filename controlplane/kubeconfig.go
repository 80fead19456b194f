package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// KubeconfigName is the name of the cluster, user and context berth
// writes, and the current context, so `kubectl --context berth` works.
const KubeconfigName = "berth"

// Kubeconfig is the subset of kubectl's config file berth writes and reads:
// one cluster reached with a CA and a bearer token. Field names are
// kubectl's, so the file works with kubectl and client-go unchanged.
type Kubeconfig struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []NamedCluster `json:"clusters"`
	Users          []NamedUser    `json:"users"`
	Contexts       []NamedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
	Preferences    struct{}       `json:"preferences"`
}

// NamedCluster is an entry of clusters[].
type NamedCluster struct {
	Name    string            `json:"name"`
	Cluster KubeconfigCluster `json:"cluster"`
}

// KubeconfigCluster is where the API is and how to trust it.
type KubeconfigCluster struct {
	Server                   string `json:"server"`
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify,omitempty"`
}

// NamedUser is an entry of users[].
type NamedUser struct {
	Name string         `json:"name"`
	User KubeconfigUser `json:"user"`
}

// KubeconfigUser is the credential: a bearer token, or a client
// certificate and its key (a user berth token create-user made).
type KubeconfigUser struct {
	Token                 string `json:"token,omitempty"`
	ClientCertificateData []byte `json:"client-certificate-data,omitempty"`
	ClientKeyData         []byte `json:"client-key-data,omitempty"`
}

// NamedContext is an entry of contexts[].
type NamedContext struct {
	Name    string               `json:"name"`
	Context KubeconfigContextRef `json:"context"`
}

// KubeconfigContextRef pairs a cluster with a user.
type KubeconfigContextRef struct {
	Cluster   string `json:"cluster"`
	User      string `json:"user"`
	Namespace string `json:"namespace,omitempty"`
}

// NewKubeconfig describes one server, trusted through caPEM (the system
// roots when empty), reached with token.
func NewKubeconfig(server string, caPEM []byte, token string) *Kubeconfig {
	return &Kubeconfig{
		APIVersion:     "v1",
		Kind:           "Config",
		Clusters:       []NamedCluster{{Name: KubeconfigName, Cluster: KubeconfigCluster{Server: server, CertificateAuthorityData: caPEM}}},
		Users:          []NamedUser{{Name: KubeconfigName, User: KubeconfigUser{Token: token}}},
		Contexts:       []NamedContext{{Name: KubeconfigName, Context: KubeconfigContextRef{Cluster: KubeconfigName, User: KubeconfigName}}},
		CurrentContext: KubeconfigName,
	}
}

// WriteKubeconfig writes a kubeconfig for one server and token, mode 0600
// (it holds the token), atomically. A file that already says the same is
// left alone, so restarts do not touch it. The admin.kubeconfig and agent
// configs are both written with it.
func WriteKubeconfig(path, server string, caPEM []byte, token string) error {
	data, err := yaml.Marshal(NewKubeconfig(server, caPEM, token))
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return tightenMode(path, 0o600)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return writeFileAtomic(path, data, 0o600)
}

// ReadKubeconfig parses a kubeconfig file.
func ReadKubeconfig(path string) (*Kubeconfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	var k Kubeconfig
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return &k, nil
}

// Current returns the cluster and user of the current context.
func (k *Kubeconfig) Current() (KubeconfigCluster, KubeconfigUser, error) {
	for _, c := range k.Contexts {
		if c.Name != k.CurrentContext {
			continue
		}
		var (
			cluster *KubeconfigCluster
			user    *KubeconfigUser
		)
		for i := range k.Clusters {
			if k.Clusters[i].Name == c.Context.Cluster {
				cluster = &k.Clusters[i].Cluster
			}
		}
		for i := range k.Users {
			if k.Users[i].Name == c.Context.User {
				user = &k.Users[i].User
			}
		}
		if cluster == nil || user == nil {
			return KubeconfigCluster{}, KubeconfigUser{}, fmt.Errorf("kubeconfig: context %q names a missing cluster or user", c.Name)
		}
		return *cluster, *user, nil
	}
	return KubeconfigCluster{}, KubeconfigUser{}, errors.New("kubeconfig: no current context")
}

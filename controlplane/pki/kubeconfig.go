package pki

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/internal/atomicfile"
)

// KubeconfigName is the name of the cluster, user and context berth
// writes, and the current context, so `kubectl --context berth` works.
const KubeconfigName = "berth"

// NewKubeconfig describes one server, trusted through caPEM (the system
// roots when empty), reached with token. It is client-go's own type, so
// the file berth writes is the one kubectl and client-go read.
func NewKubeconfig(server string, caPEM []byte, token string) *clientcmdapi.Config {
	k := clientcmdapi.NewConfig()
	k.Clusters[KubeconfigName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	k.AuthInfos[KubeconfigName] = &clientcmdapi.AuthInfo{Token: token}
	k.Contexts[KubeconfigName] = &clientcmdapi.Context{Cluster: KubeconfigName, AuthInfo: KubeconfigName}
	k.CurrentContext = KubeconfigName
	return k
}

// WriteKubeconfig writes a kubeconfig for one server and token, mode 0600
// (it holds the token), atomically. A file that already says the same is
// left alone, so restarts do not touch it. The admin.kubeconfig and agent
// configs are both written with it.
func WriteKubeconfig(path, server string, caPEM []byte, token string) error {
	return writeKubeconfig(path, NewKubeconfig(server, caPEM, token))
}

func writeKubeconfig(path string, k *clientcmdapi.Config) error {
	data, err := clientcmd.Write(*k)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return tightenMode(path, 0o600)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, data, 0o600)
}

// SetServers lists further servers of the cluster for berth in the
// cluster's extension (client.ServersExtension), none when servers is
// empty; kubectl goes on using its Server alone.
func SetServers(c *clientcmdapi.Cluster, servers []string) {
	delete(c.Extensions, client.ServersExtension)
	if len(servers) == 0 {
		return
	}
	raw, _ := json.Marshal(client.ServerList{Servers: servers}) // strings always marshal
	if c.Extensions == nil {
		c.Extensions = map[string]runtime.Object{}
	}
	c.Extensions[client.ServersExtension] = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

// ReadKubeconfig parses a kubeconfig file with client-go's loader.
func ReadKubeconfig(path string) (*clientcmdapi.Config, error) {
	k, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return k, nil
}

// KubeconfigCurrent returns the cluster and user of k's current context.
func KubeconfigCurrent(k *clientcmdapi.Config) (*clientcmdapi.Cluster, *clientcmdapi.AuthInfo, error) {
	c, ok := k.Contexts[k.CurrentContext]
	if !ok || k.CurrentContext == "" {
		return nil, nil, errors.New("kubeconfig: no current context")
	}
	cluster, user := k.Clusters[c.Cluster], k.AuthInfos[c.AuthInfo]
	if cluster == nil || user == nil {
		return nil, nil, fmt.Errorf("kubeconfig: context %q names a missing cluster or user", k.CurrentContext)
	}
	return cluster, user, nil
}

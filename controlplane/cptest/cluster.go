package cptest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/pki"
	"github.com/berth-dev/berth/testtool"
)

// Cluster is a real control plane (memory store) on a loopback port, with
// an admin client and a way to join nodes.
type Cluster struct {
	Admin *client.Client
	Paths pki.Paths
	URL   string
}

// StartCluster starts a Cluster for the test; it skips under -short.
func StartCluster(t *testing.T) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	paths := Start(t, controlplane.Config{}).Credentials().Paths
	cfg, err := client.LoadKubeconfig(paths.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "the API server", func() error {
		_, err := admin.Get(context.Background(), api.KindOf(&api.Namespace{}), "", "default")
		return err
	})
	return &Cluster{Admin: admin, Paths: paths, URL: cfg.Server}
}

// JoinSecrets are what an agent joins with: the node token and the CA.
func (c *Cluster) JoinSecrets(t *testing.T) (token string, ca []byte) {
	t.Helper()
	data, err := os.ReadFile(c.Paths.NodeToken)
	if err != nil {
		t.Fatal(err)
	}
	if ca, err = os.ReadFile(c.Paths.CACert); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data)), ca
}

// Join trades the node token for the node's own client, as an agent does.
func (c *Cluster) Join(t *testing.T, node string) *client.Client {
	t.Helper()
	token, ca := c.JoinSecrets(t)
	joiner, err := client.New(&client.Config{Server: c.URL, Token: token, CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := joiner.Join(context.Background(), api.JoinRequest{NodeName: node})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	nc, err := client.New(&client.Config{Server: c.URL, Token: resp.Token, CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// KeptCredential is a client with the node credential an agent keeps in
// dataDir: the join token joins no node that is live.
func (c *Cluster) KeptCredential(t *testing.T, dataDir string) *client.Client {
	t.Helper()
	_, ca := c.JoinSecrets(t)
	tok, err := os.ReadFile(filepath.Join(dataDir, "node-credential"))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := client.New(&client.Config{Server: c.URL, Token: strings.TrimSpace(string(tok)), CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// Node reads a Node as the admin.
func (c *Cluster) Node(t *testing.T, name string) *api.Node {
	t.Helper()
	obj, err := c.Admin.Get(context.Background(), api.KindOf(&api.Node{}), "", name)
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return obj.(*api.Node)
}

// Lease reads a node's Lease as the admin.
func (c *Cluster) Lease(t *testing.T, name string) *api.Lease {
	t.Helper()
	obj, err := c.Admin.Get(context.Background(), api.KindOf(&api.Lease{}), api.NamespaceNodeLease, name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*api.Lease)
}

package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berth-dev/berth/controlplane/pki"
	"github.com/berth-dev/berth/internal/atomicfile"
)

// clusterSecrets are the credentials every control plane of a cluster
// shares, kept in etcd under the prefix's bootstrap key: the CA that
// signs each one's serving certificate and every agent's, the admin and
// node tokens, the key that signs service-account tokens and node
// credentials, and the node CA that signs agents' serving certificates
// (which every control plane's agent proxy must trust). Anyone who reads them is the cluster's admin, as anyone
// who reads a Kubernetes cluster's etcd is: give etcd client
// certificates (--etcd-certfile) and keep it to the control planes.
type clusterSecrets struct {
	CACert     []byte `json:"caCert"`
	CAKey      []byte `json:"caKey"`
	AdminToken []byte `json:"adminToken"`
	NodeToken  []byte `json:"nodeToken"`
	SAKey      []byte `json:"serviceAccountKey"`
	// The node CA is missing from what a control plane of an older berth
	// published: the first one to start with it adds its own.
	NodeCACert []byte `json:"nodeCACert,omitempty"`
	NodeCAKey  []byte `json:"nodeCAKey,omitempty"`
}

// secretFile is one shared secret and its file in the data dir.
type secretFile struct {
	path string
	data *[]byte
}

// files pairs each secret with its file in the data dir.
func (cs *clusterSecrets) files(p pki.Paths) []secretFile {
	return []secretFile{
		{p.CACert, &cs.CACert}, {p.CAKey, &cs.CAKey},
		{p.AdminToken, &cs.AdminToken}, {p.NodeToken, &cs.NodeToken},
		{p.SAKey, &cs.SAKey},
		{p.NodeCACert, &cs.NodeCACert}, {p.NodeCAKey, &cs.NodeCAKey},
	}
}

// readSecrets reads the shared credentials from a data dir.
func readSecrets(p pki.Paths) (*clusterSecrets, error) {
	cs := &clusterSecrets{}
	for _, f := range cs.files(p) {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		*f.data = data
	}
	return cs, nil
}

// install writes the shared credentials into a data dir that lacks them,
// and refuses one that holds others: it belongs to another cluster.
func (cs *clusterSecrets) install(p pki.Paths, key string) error {
	if err := pki.EnsurePrivateDir(p.TLSDir); err != nil {
		return err
	}
	for _, f := range cs.files(p) {
		if len(*f.data) == 0 {
			continue // published by an older control plane
		}
		have, err := os.ReadFile(f.path)
		switch {
		case err == nil:
			if !bytes.Equal(bytes.TrimSpace(have), bytes.TrimSpace(*f.data)) {
				return fmt.Errorf("credentials: %s is not the cluster's (etcd %s): this data dir belongs to another cluster or another --etcd-prefix; move its credentials (tls/ca.*, admin-token, node-token, sa.key) away to join this one", f.path, key)
			}
		case errors.Is(err, fs.ErrNotExist):
			if err := atomicfile.WriteFile(f.path, *f.data, 0o600); err != nil {
				return fmt.Errorf("credentials: %w", err)
			}
		default:
			return fmt.Errorf("credentials: %w", err)
		}
	}
	return nil
}

// shareCredentials makes the data dir hold the cluster's shared
// credentials, then completes it with ensure (EnsureCredentials: this
// control plane's own serving certificate, admin.kubeconfig). A data dir
// without them takes the cluster's from etcd; the first control plane of
// a cluster publishes its own, made by ensure when it has none; a data
// dir that holds other ones is refused. So is one that has served a
// cluster (ClusterFile) when etcd holds none at key: a wrong --store or
// --etcd-prefix would start an empty cluster under that one's
// credentials, whose agents would stop every pod it does not hold.
func shareCredentials(ctx context.Context, cli *clientv3.Client, key string, p pki.Paths, log *slog.Logger, ensure func() (*pki.Credentials, error)) (*pki.Credentials, error) {
	served := filepath.Join(p.Dir, ClusterFile)
	cluster := strings.Join(cli.Endpoints(), ",") + " " + key
	record := func(creds *pki.Credentials) (*pki.Credentials, error) {
		if err := atomicfile.WriteFile(served, []byte(cluster+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		return creds, nil
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		resp, err := cli.Get(rctx, key)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("credentials: read etcd %s: %w", key, err)
		}
		if len(resp.Kvs) == 1 {
			var cs clusterSecrets
			if err := json.Unmarshal(resp.Kvs[0].Value, &cs); err != nil {
				return nil, fmt.Errorf("credentials: etcd %s: %w", key, err)
			}
			if err := cs.install(p, key); err != nil {
				return nil, err
			}
			creds, err := ensure()
			if err != nil {
				return nil, err
			}
			if len(cs.NodeCACert) == 0 {
				// Published before the node CA existed: add this one's,
				// unless another control plane added its own meanwhile.
				added, err := addNodeCA(ctx, cli, key, resp.Kvs[0].ModRevision, &cs, p)
				if err != nil {
					return nil, err
				}
				if !added {
					continue
				}
				log.Info("published this control plane's node CA as the cluster's", "etcd", key)
			}
			return record(creds)
		}
		if was, err := os.ReadFile(served); err == nil {
			return nil, fmt.Errorf("credentials: etcd %s holds no cluster at %s, but this data dir served the one at %s: check --store and --etcd-prefix; to start a new cluster with this data dir's credentials, move %s away", strings.Join(cli.Endpoints(), ","), key, strings.TrimSpace(string(was)), served)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		_, statErr := os.Stat(p.CACert)
		hadOwn := statErr == nil
		creds, err := ensure()
		if err != nil {
			return nil, err
		}
		cs, err := readSecrets(p)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(cs)
		if err != nil {
			return nil, err
		}
		rctx, cancel = context.WithTimeout(ctx, requestTimeout)
		tresp, err := cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(data))).
			Commit()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("credentials: write etcd %s: %w", key, err)
		}
		if tresp.Succeeded {
			log.Info("published this control plane's credentials as the cluster's", "etcd", key)
			return record(creds)
		}
		// Another control plane published first. What this one made
		// just now gives way to the cluster's; credentials it had from
		// before are checked against them.
		if !hadOwn {
			// The serving certificate goes too: the CA that signed it
			// is not the cluster's.
			made := []string{p.ServerCert, p.ServerKey}
			for _, f := range cs.files(p) {
				made = append(made, f.path)
			}
			for _, path := range made {
				if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("credentials: %w", err)
				}
			}
		}
	}
}

// addNodeCA adds the data dir's node CA to the cluster's credentials at
// key if they are still at revision rev. When another control plane
// changed them first, the node CA made here is removed (false): the
// caller reads the cluster's again and takes theirs.
func addNodeCA(ctx context.Context, cli *clientv3.Client, key string, rev int64, cs *clusterSecrets, p pki.Paths) (bool, error) {
	var err error
	if cs.NodeCACert, err = os.ReadFile(p.NodeCACert); err != nil {
		return false, fmt.Errorf("credentials: %w", err)
	}
	if cs.NodeCAKey, err = os.ReadFile(p.NodeCAKey); err != nil {
		return false, fmt.Errorf("credentials: %w", err)
	}
	data, err := json.Marshal(cs)
	if err != nil {
		return false, err
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	tresp, err := cli.Txn(rctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpPut(key, string(data))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("credentials: write etcd %s: %w", key, err)
	}
	if tresp.Succeeded {
		return true, nil
	}
	for _, path := range []string{p.NodeCACert, p.NodeCAKey} {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("credentials: %w", err)
		}
	}
	return false, nil
}

// ClusterFile, in the data dir of a control plane that has served an etcd
// store, names that etcd and the key of its cluster's credentials.
const ClusterFile = "etcd-cluster"

// checkNotServedEtcd refuses to start a store of its own (bolt, memory) on
// a data dir that served an etcd cluster: --store forgotten, it would be
// an empty cluster under that one's credentials, and an agent that moved
// on to it would stop every pod it does not hold.
func checkNotServedEtcd(dataDir string) error {
	served := filepath.Join(dataDir, ClusterFile)
	was, err := os.ReadFile(served)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return fmt.Errorf("this data dir served the etcd cluster %s, and a store of its own would start an empty cluster under its credentials: start it with --store etcd://… as before, or move %s away to make it a cluster of its own", strings.TrimSpace(string(was)), served)
}

// requestTimeout bounds one request to etcd outside the store.
const requestTimeout = 10 * time.Second

package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane/pki"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
)

// cmKind is the ConfigMap kind.
var cmKind = api.MustLookupResource("configmaps")

// startClusterMember runs a control plane over the etcd at endpoint,
// listening on host, until the test ends or stop.
func startClusterMember(t *testing.T, endpoint, host, dataDir string, specs ...source.Spec) *running {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return runControlPlane(t, Config{
		DataDir: dataDir,
		Listen:  host + ":0",
		Store:   StoreEtcdScheme + u.Host,
		Etcd:    EtcdConfig{LeaseDuration: 2 * time.Second},
		Sources: specs,
		Logger:  slog.New(slog.DiscardHandler),
	})
}

// adminClient talks to one control plane's API as the admin.
func adminClient(t *testing.T, cp *running) *client.Client {
	t.Helper()
	c, err := client.New(&client.Config{Server: cp.LocalURL(), CAData: cp.Credentials().CAPEM, Token: cp.Credentials().AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func leads(cp *running) error {
	if cp.Store().Following() {
		return errors.New("follows")
	}
	return nil
}

func TestControlPlanesShareAnEtcdStore(t *testing.T) {
	ep := etcdtest.Start(t)
	manifests := t.TempDir()
	write(t, filepath.Join(manifests, "a.yaml"), cm("from-git", "1"))
	spec, err := source.Parse("name=site," + manifests)
	if err != nil {
		t.Fatal(err)
	}
	first := startClusterMember(t, ep, "127.0.0.1", t.TempDir(), spec)
	poll(t, "the first control plane leads", func() error { return leads(first) })
	second := startClusterMember(t, ep, "127.0.0.2", t.TempDir(), spec)

	// The second took the cluster's credentials from etcd.
	c1, c2 := first.Credentials(), second.Credentials()
	if c1.AdminToken != c2.AdminToken || c1.NodeToken != c2.NodeToken || !bytes.Equal(c1.CAPEM, c2.CAPEM) || !c1.NodeCACert.Equal(c2.NodeCACert) {
		t.Fatal("the control planes hold different credentials")
	}
	if !c2.ServingCert.Leaf.Equal(c2.ServingCert.Leaf) || c1.ServingCert.Leaf.Equal(c2.ServingCert.Leaf) {
		t.Fatal("the control planes share a serving certificate; each needs its own")
	}
	if err := leads(second); err == nil {
		t.Fatal("both control planes lead")
	}

	ctx := context.Background()
	via := adminClient(t, second)
	// What the leader made at election and applied from the source is
	// served by the follower.
	poll(t, "the follower serves the source's objects", func() error {
		_, err := via.Get(ctx, cmKind, "default", "from-git")
		return err
	})
	if _, err := via.Get(ctx, api.MustLookupResource("namespaces"), "", "kube-system"); err != nil {
		t.Fatal(err)
	}
	if got := scrapeServer(t, second)["berth_leader_election_master_status"]; got != 0 {
		t.Errorf("the follower's berth_leader_election_master_status = %v, want 0", got)
	}
	if got := scrapeServer(t, first)["berth_leader_election_master_status"]; got != 1 {
		t.Errorf("the leader's berth_leader_election_master_status = %v, want 1", got)
	}
	poll(t, "the follower is ready", func() error {
		if code, body := getPublic(t, second, "/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]leader ok") || !strings.Contains(body, "[+]sources ok") {
			return errors.New(body)
		}
		return nil
	})
	// A write through the follower goes to the leader, and the follower
	// answers once it has it: its client reads what it wrote.
	made, err := via.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "via-follower"}, Data: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := via.Get(ctx, cmKind, "default", "via-follower")
	if err != nil || got.GetResourceVersion() != made.GetResourceVersion() {
		t.Fatalf("read after write through the follower: %v, %v", got, err)
	}
	if _, err := first.Store().Get(cmKind, "default", "via-follower"); err != nil {
		t.Fatalf("the leader does not hold the follower's write: %v", err)
	}
	// The follower's own store takes no writes.
	if _, err := second.Store().Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "direct"}}); !errors.Is(err, store.ErrNotLeader) {
		t.Fatalf("a write into the follower's store: %v", err)
	}

	// The leader stops: the follower takes over, and keeps the state.
	first.stop()
	poll(t, "the second control plane leads", func() error { return leads(second) })
	if _, err := via.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"from-git", "via-follower", "after"} {
		if _, err := via.Get(ctx, cmKind, "default", name); err != nil {
			t.Errorf("after the failover: %v", err)
		}
	}
	// The first comes back, follows, and forwards.
	again := startClusterMember(t, ep, "127.0.0.1", c1.Paths.Dir, spec)
	back := adminClient(t, again)
	poll(t, "the first control plane follows the second", func() error {
		_, err := back.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "back"}})
		return err
	})
	if err := leads(again); err == nil {
		t.Fatal("the restarted control plane leads beside the second")
	}
	if _, err := second.Store().Get(cmKind, "default", "back"); err != nil {
		t.Fatalf("the leader does not hold the write forwarded to it: %v", err)
	}
}

func TestDataDirOfAnotherClusterIsRefused(t *testing.T) {
	ep := etcdtest.Start(t)
	startClusterMember(t, ep, "127.0.0.1", t.TempDir())
	// A data dir with credentials of its own, from a server that ran
	// alone.
	own := t.TempDir()
	alone := startControlPlane(t, own, StoreMemory)
	alone.stop()
	u, _ := url.Parse(ep)
	_, err := New(context.Background(), Config{
		DataDir: own, Listen: "127.0.0.2:0", Store: StoreEtcdScheme + u.Host,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err == nil || !strings.Contains(err.Error(), "belongs to another cluster") {
		t.Fatalf("joining with another cluster's credentials: %v", err)
	}
}

// A data dir that served a cluster is refused an etcd prefix that holds
// none, rather than starting an empty cluster under its credentials; on
// its own prefix it joins again.
func TestDataDirOfAClusterIsRefusedAnEmptyPrefix(t *testing.T) {
	ep := etcdtest.Start(t)
	dir := t.TempDir()
	member := startClusterMember(t, ep, "127.0.0.1", dir)
	poll(t, "the control plane leads", func() error { return leads(member) })
	member.stop()
	u, _ := url.Parse(ep)
	cfg := Config{
		DataDir: dir, Listen: "127.0.0.1:0", Store: StoreEtcdScheme + u.Host,
		Etcd:   EtcdConfig{Prefix: "/elsewhere", LeaseDuration: 2 * time.Second},
		Logger: slog.New(slog.DiscardHandler),
	}
	_, err := New(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "holds no cluster at /elsewhere/bootstrap") || !strings.Contains(err.Error(), filepath.Join(dir, ClusterFile)) {
		t.Fatalf("a data dir of the /berth cluster on /elsewhere: %v", err)
	}
	startClusterMember(t, ep, "127.0.0.1", dir)
}

// A data dir that served an etcd cluster is refused a store of its own
// (--store forgotten), which would start an empty cluster under its
// credentials, until its etcd-cluster file is moved away.
func TestDataDirOfAnEtcdClusterIsRefusedAStoreOfItsOwn(t *testing.T) {
	ep := etcdtest.Start(t)
	dir := t.TempDir()
	member := startClusterMember(t, ep, "127.0.0.1", dir)
	member.stop()
	_, err := New(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0", Store: StoreMemory, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "served the etcd cluster") || !strings.Contains(err.Error(), filepath.Join(dir, ClusterFile)) {
		t.Fatalf("a store of its own on a data dir that served etcd: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, ClusterFile)); err != nil {
		t.Fatal(err)
	}
	startControlPlane(t, dir, StoreMemory)
}

// TestClusterCredentialsGainTheNodeCA: credentials an older control plane
// published in etcd, without a node CA, get the node CA of the first
// control plane that starts with one, and every other takes that one, so
// each control plane's proxy trusts every agent's certificate.
func TestClusterCredentialsGainTheNodeCA(t *testing.T) {
	ep := etcdtest.Start(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	const key = "/berth-test/bootstrap"
	opts := pki.Options{Listen: "127.0.0.1:0", Hostname: "h"}
	older := t.TempDir()
	if _, err := pki.EnsureCredentials(older, opts); err != nil {
		t.Fatal(err)
	}
	cs, err := readSecrets(pki.PathsIn(older))
	if err != nil {
		t.Fatal(err)
	}
	cs.NodeCACert, cs.NodeCAKey = nil, nil
	data, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, key, string(data)); err != nil {
		t.Fatal(err)
	}
	share := func() *pki.Credentials {
		dir := t.TempDir()
		creds, err := shareCredentials(ctx, cli, key, pki.PathsIn(dir), slog.New(slog.DiscardHandler), func() (*pki.Credentials, error) {
			return pki.EnsureCredentials(dir, opts)
		})
		if err != nil {
			t.Fatal(err)
		}
		return creds
	}
	a, b := share(), share()
	if a.NodeCACert == nil || !a.NodeCACert.Equal(b.NodeCACert) {
		t.Fatal("the control planes hold different node CAs")
	}
	if !bytes.Equal(a.CAPEM, b.CAPEM) || !bytes.Equal(bytes.TrimSpace(a.CAPEM), bytes.TrimSpace(cs.CACert)) {
		t.Error("the cluster CA is not the published one")
	}
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var now clusterSecrets
	if err := json.Unmarshal(resp.Kvs[0].Value, &now); err != nil || len(now.NodeCAKey) == 0 {
		t.Fatalf("etcd holds no node CA: %v", err)
	}
}

// A leader deposed while it runs (its election key gone, as when its
// lease ran out while it was frozen) steps down without stopping: its
// leader metric is 0, it serves on as a follower of the new leader, and
// a write through it reaches the new leader.
func TestDeposedLeaderStepsDownAndFollows(t *testing.T) {
	ep := etcdtest.Start(t)
	first := startClusterMember(t, ep, "127.0.0.1", t.TempDir())
	poll(t, "the first control plane leads", func() error { return leads(first) })
	second := startClusterMember(t, ep, "127.0.0.2", t.TempDir())
	ctx := context.Background()
	via := adminClient(t, first)
	if _, err := via.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before"}}); err != nil {
		t.Fatal(err)
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// Only the first's election key goes, as when its lease runs out: the
	// second, campaigning behind it, is elected. (Deleting the second's
	// too would leave the two to race to campaign again.)
	var keys *clientv3.GetResponse
	poll(t, "both control planes campaigning", func() error {
		keys, err = cli.Get(ctx, "/berth/leader/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			return err
		}
		if len(keys.Kvs) != 2 {
			return errors.New("the second is not campaigning yet")
		}
		return nil
	})
	if _, err := cli.Delete(ctx, string(keys.Kvs[0].Key)); err != nil {
		t.Fatal(err)
	}
	poll(t, "the second control plane leads", func() error { return leads(second) })
	// A read through the old leader confirms its lead first, and learns
	// that it lost: it steps down, rather than answer from what it held.
	poll(t, "the old leader steps down", func() error {
		_, _ = via.Get(ctx, cmKind, "default", "before")
		if !first.Store().Following() {
			return errors.New("still leads")
		}
		return nil
	})
	if got := scrapeServer(t, first)["berth_leader_election_master_status"]; got != 0 {
		t.Errorf("the deposed leader's berth_leader_election_master_status = %v, want 0", got)
	}
	poll(t, "a write through the old leader reaches the new one", func() error {
		_, err := via.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after"}})
		return err
	})
	if _, err := second.Store().Get(cmKind, "default", "after"); err != nil {
		t.Fatalf("the new leader does not hold the write sent through the old one: %v", err)
	}
	for _, name := range []string{"before", "after"} {
		if _, err := via.Get(ctx, cmKind, "default", name); err != nil {
			t.Errorf("read through the old leader: %v", err)
		}
	}
	select {
	case <-first.done:
		t.Fatal("the deposed control plane stopped")
	default:
	}

	// The second stops: the first, following, is elected again and
	// runs its controllers anew.
	second.stop()
	poll(t, "the first control plane leads again", func() error { return leads(first) })
	if _, err := via.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "again"}}); err != nil {
		t.Fatal(err)
	}
	if got := scrapeServer(t, first)["berth_leader_election_master_status"]; got != 1 {
		t.Errorf("the leader's berth_leader_election_master_status = %v, want 1", got)
	}
}

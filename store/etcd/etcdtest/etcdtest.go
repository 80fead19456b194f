// Package etcdtest runs a real etcd inside a test: one member on loopback
// with its data in the test's temporary directory.
package etcdtest

import (
	"net"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Start runs a one-member etcd until the test ends and returns its client
// URL.
func Start(t testing.TB) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "berth-test"
	cfg.Dir = t.TempDir()
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"stderr"}
	// The test's data is thrown away: fsync buys nothing but time.
	cfg.UnsafeNoFsync = true
	client, peer := freeURL(t), freeURL(t)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd: %v", err)
	case <-time.After(30 * time.Second):
		e.Close()
		t.Fatal("etcd not ready after 30s")
	}
	return client.String()
}

// freeURL is an http URL on a loopback port nothing listens on now.
func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return url.URL{Scheme: "http", Host: addr}
}

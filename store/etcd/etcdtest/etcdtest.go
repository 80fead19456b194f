// Package etcdtest runs a real etcd inside a test: one member on loopback
// with its data in the test's temporary directory.
package etcdtest

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Start runs a one-member etcd until the test ends and returns its client
// URL. It does not fsync: a test's data is thrown away.
func Start(t testing.TB) string {
	t.Helper()
	return start(t, false, "127.0.0.1")
}

// StartOn is Start listening on host, an address of this machine (or of
// the network namespace the test runs in), for servers that reach etcd
// from network namespaces of their own.
func StartOn(t testing.TB, host string) string {
	t.Helper()
	return start(t, false, host)
}

// StartDurable is Start with etcd fsyncing its log as a real member does,
// for benchmarks of what a commit costs.
func StartDurable(t testing.TB) string {
	t.Helper()
	return start(t, true, "127.0.0.1")
}

func start(t testing.TB, fsync bool, host string) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "berth-test"
	cfg.Dir = t.TempDir()
	// etcd's errors go to a file, shown when the test fails: at its stop
	// etcd logs its closed listeners as errors.
	logFile := filepath.Join(t.TempDir(), "etcd.log")
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{logFile}
	cfg.UnsafeNoFsync = !fsync
	client, peer := freeURL(t, host), freeURL(t, host)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(func() {
		e.Close()
		if t.Failed() {
			if log, err := os.ReadFile(logFile); err == nil && len(log) > 0 {
				t.Logf("etcd's log:\n%s", log)
			}
		}
	})
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

// freeURL is an http URL on a port of host nothing listens on now.
func freeURL(t testing.TB, host string) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return url.URL{Scheme: "http", Host: addr}
}

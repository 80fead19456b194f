package controlplane

import (
	"context"
	"crypto/tls"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestServingAddresses(t *testing.T) {
	addrs := func() []string { return []string{"192.0.2.10", "2001:db8::10"} }
	for _, tc := range []struct {
		listen string
		sans   []string
		want   []string
	}{
		// Every address: the machine's own, which agents elsewhere dial.
		{":6443", nil, []string{"192.0.2.10", "2001:db8::10"}},
		{"0.0.0.0:6443", []string{"api.example.test"}, []string{"api.example.test", "192.0.2.10", "2001:db8::10"}},
		{"[::]:6443", nil, []string{"192.0.2.10", "2001:db8::10"}},
		// One address: it alone (the caller adds it), and the --tls-san.
		{"10.0.0.1:6443", []string{"lb.example.test"}, []string{"lb.example.test"}},
		{"127.0.0.1:6443", nil, nil},
	} {
		got := servingAddresses(Config{Listen: tc.listen, TLSSANs: tc.sans}, addrs)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: %v, want %v", tc.listen, tc.sans, got, tc.want)
		}
	}
}

func TestConfigCheckTLSSANs(t *testing.T) {
	for san, ok := range map[string]bool{"api.example.test": true, "10.0.0.1": true, "[2001:db8::1]": true, "not a name": false, "-bad.example": false} {
		err := Config{TLSSANs: []string{san}}.Check()
		if (err == nil) != ok {
			t.Errorf("--tls-san %q: %v", san, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--tls-san") {
			t.Errorf("--tls-san %q: the error does not name the flag: %v", san, err)
		}
	}
}

// The other control planes dial --advertise-address at the listen port:
// it names a host, and takes no port or scheme.
func TestConfigCheckAdvertiseAddress(t *testing.T) {
	for addr, ok := range map[string]bool{"10.0.0.5": true, "2001:db8::5": true, "[2001:db8::5]": true, "cp1.example.test": true,
		"10.0.0.5:6443": false, "https://cp1.example.test": false, "not a name": false} {
		err := Config{Store: "etcd://127.0.0.1:2379", AdvertiseAddress: addr}.Check()
		if (err == nil) != ok {
			t.Errorf("--advertise-address %q: %v", addr, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--advertise-address") {
			t.Errorf("--advertise-address %q: the error does not name the flag: %v", addr, err)
		}
	}
}

// TestServerCertificateCoversTLSSANs: a client that dials the server by a
// --tls-san name verifies its certificate with the cluster CA.
func TestServerCertificateCoversTLSSANs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Store: StoreMemory,
		TLSSANs: []string{"api.example.test", "192.0.2.77"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.Run(ctx) })
	defer wg.Wait()
	defer cancel()
	for _, name := range []string{"api.example.test", "192.0.2.77", "localhost"} {
		conn, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{RootCAs: s.Credentials().CAPool, ServerName: name})
		if err != nil {
			t.Errorf("dial as %s: %v", name, err)
			continue
		}
		conn.Close()
	}
	if conn, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{RootCAs: s.Credentials().CAPool, ServerName: "other.example.test"}); err == nil {
		conn.Close()
		t.Error("the certificate covers a name nobody gave")
	}
}

// TestAdminServers: one of several servers given a --tls-san names it in
// admin.kubeconfig, at the listen port, and lists itself after it; a
// server of its own, or one given no name, names itself alone.
func TestAdminServers(t *testing.T) {
	const etcd = "etcd://127.0.0.1:2379"
	for _, tc := range []struct {
		store, listen string
		sans          []string
		server        string
		servers       []string
	}{
		{etcd, "", []string{"berth.example.test", "192.0.2.1"}, "https://berth.example.test:6443", []string{"https://127.0.0.1:6443"}},
		{etcd, "10.0.0.5:7443", []string{"2001:db8::5"}, "https://[2001:db8::5]:7443", []string{"https://10.0.0.5:7443"}},
		{etcd, "[::]:6443", []string{"[2001:db8::5]"}, "https://[2001:db8::5]:6443", []string{"https://127.0.0.1:6443"}},
		{etcd, ":6443", nil, "", nil},
		{StoreMemory, ":6443", []string{"berth.example.test"}, "", nil},
		{"", ":6443", []string{"berth.example.test"}, "", nil},
	} {
		server, servers, err := adminServers(Config{Store: tc.store, Listen: tc.listen, TLSSANs: tc.sans})
		if err != nil || server != tc.server || !slices.Equal(servers, tc.servers) {
			t.Errorf("%s %q %v: %q %v %v, want %q %v", tc.store, tc.listen, tc.sans, server, servers, err, tc.server, tc.servers)
		}
	}
}

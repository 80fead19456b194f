package client_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/client"
)

// TestLoadKubeconfigServersExtension: the servers berth's extension lists
// follow the cluster's server, each once; a bad entry is an error naming
// the extension.
func TestLoadKubeconfigServersExtension(t *testing.T) {
	dir := t.TempDir()
	write := func(ext string) string {
		p := filepath.Join(dir, "config")
		body := `apiVersion: v1
kind: Config
current-context: berth
clusters:
- name: berth
  cluster:
    server: https://berth.example.test:6443
    extensions:
    - name: other.example.test/thing
      extension: {a: b}
    - name: berth.dev/servers
      extension: ` + ext + `
contexts:
- name: berth
  context: {cluster: berth, user: admin}
users:
- name: admin
  user: {token: secret}
`
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := client.LoadKubeconfig(write(`{servers: ["https://10.0.0.5:6443", "https://berth.example.test:6443/", "https://10.0.0.6:6443"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://berth.example.test:6443,https://10.0.0.5:6443,https://10.0.0.6:6443"; cfg.Server != want {
		t.Errorf("servers %q, want %q", cfg.Server, want)
	}
	for _, bad := range []string{`{servers: ["10.0.0.5:6443"]}`, `{servers: ["https://a:1,https://b:1"]}`, `{servers: "https://a:1"}`} {
		if _, err := client.LoadKubeconfig(write(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestJoinServers(t *testing.T) {
	for _, tc := range []struct {
		first  string
		others []string
		want   string
	}{
		{"https://a:1", nil, "https://a:1"},
		{"https://a:1", []string{"https://b:1", "https://a:1/"}, "https://a:1,https://b:1"},
		{"https://a:1,https://b:1", []string{"https://c:1", "https://b:1"}, "https://a:1,https://b:1,https://c:1"},
		{"", []string{"https://b:1"}, "https://b:1"},
	} {
		if got := client.JoinServers(tc.first, tc.others); got != tc.want {
			t.Errorf("JoinServers(%q, %q) = %q, want %q", tc.first, tc.others, got, tc.want)
		}
	}
}

// FuzzDecodeServerList: whatever a kubeconfig holds, the extension's
// decoder answers a list or an error, and every server of a list is one
// Config.Server takes.
func FuzzDecodeServerList(f *testing.F) {
	f.Add([]byte(`{"servers":["https://10.0.0.5:6443"]}`))
	f.Add([]byte(`{"servers":["https://a:1,https://b:1"]}`))
	f.Add([]byte(`{"servers":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		servers, err := client.DecodeServerList(raw)
		if err != nil {
			return
		}
		for _, s := range servers {
			if _, err := client.ParseServers(s); err != nil {
				t.Fatalf("%q passed, but %v", s, err)
			}
		}
	})
}

// Clients given one list of servers with Spread start at servers chosen
// at random, so that a cluster's agents do not all talk to the first;
// without it every one starts at the first, as kubectl would.
func TestSpreadClientsStartAcrossTheServers(t *testing.T) {
	servers := []string{"https://10.0.0.5:6443", "https://10.0.0.6:6443", "https://10.0.0.7:6443"}
	count := func(spread bool) map[string]int {
		n := map[string]int{}
		for range 100 {
			c, err := client.New(&client.Config{Server: strings.Join(servers, ","), Spread: spread})
			if err != nil {
				t.Fatal(err)
			}
			n[c.Server()]++
		}
		return n
	}
	// 100 clients leave one of three servers out with a chance of
	// 3·(2/3)^100, about 10^-17.
	if n := count(true); len(n) != len(servers) {
		t.Errorf("100 spread clients started at %v, want each of the 3 servers", n)
	}
	if n := count(false); n[servers[0]] != 100 {
		t.Errorf("100 clients without Spread started at %v, want the first server only", n)
	}
}

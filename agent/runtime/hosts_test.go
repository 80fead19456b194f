package runtime

import "testing"

// TestHostsContent writes the kubelet's managed hosts files.
func TestHostsContent(t *testing.T) {
	aliases := []HostAlias{{IP: "198.18.9.9", Hostnames: []string{"foo.local", "bar.local"}}, {IP: "198.18.9.10", Hostnames: []string{"baz"}}}
	for _, c := range []struct {
		name        string
		h           Hosts
		hostNetwork bool
		ips         []string
		want        string
	}{
		{"pod", Hosts{}, false, []string{"198.19.0.5"}, "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n198.19.0.5\tweb\n"},
		{"subdomain and aliases", Hosts{Domain: "sub.default.svc.cluster.local", Aliases: aliases}, false, []string{"198.19.0.5", "fd00::5"},
			"# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
				"198.19.0.5\tweb.sub.default.svc.cluster.local\tweb\nfd00::5\tweb.sub.default.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n198.18.9.9\tfoo.local\tbar.local\n198.18.9.10\tbaz\n"},
		{"host network", Hosts{NodeHosts: []byte("127.0.0.1 localhost\n198.18.0.2 node-a\n"), Aliases: aliases[1:]}, true, []string{"198.18.0.2"},
			"# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n198.18.0.2 node-a\n\n# Entries added by HostAliases.\n198.18.9.10\tbaz\n"},
	} {
		if got := string(c.h.Content(c.hostNetwork, "web", c.ips)); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

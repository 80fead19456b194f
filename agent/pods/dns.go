package pods

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// DefaultResolvConf is the node's resolv.conf: what a pod with dnsPolicy
// Default starts from, and whose search domains follow the cluster's,
// as the kubelet's --resolv-conf.
const DefaultResolvConf = "/etc/resolv.conf"

// DefaultHostsFile is the node's hosts file, copied into the managed
// /etc/hosts of a hostNetwork pod, as the kubelet does.
const DefaultHostsFile = "/etc/hosts"

// The resolver's limits the kubelet keeps a pod's resolv.conf within
// (glibc's): what passes them is dropped.
const (
	maxDNSServers      = 3
	maxDNSSearches     = 32
	maxDNSSearchLength = 2048
)

// podDNS is the pod's resolv.conf by its dnsPolicy and dnsConfig, as the
// kubelet writes it: ClusterFirst (the default; for a hostNetwork pod
// only as ClusterFirstWithHostNet) names the cluster's DNS server with
// Kubernetes' search path, then the node's search domains, and ndots:5;
// Default is the node's resolv.conf (read by node, only when dnsConfig
// adds to it: nil leaves the runtime's copy of it); None starts empty.
// dnsConfig's name servers and search domains go after those, its options
// replace those of the same name. With no cluster DNS server known,
// ClusterFirst is Default.
func podDNS(pod *api.Pod, server string, node func() (*runtime.DNS, error)) (*runtime.DNS, error) {
	cluster := wantsClusterDNS(pod) && server != ""
	extra := pod.Spec.DNSConfig
	var out *runtime.DNS
	switch {
	case pod.Spec.DNSPolicy == api.DNSNone:
		out = &runtime.DNS{}
	case cluster:
		out = &runtime.DNS{
			Servers:  []string{server},
			Searches: []string{pod.Namespace + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain},
			Options:  []string{"ndots:5"},
		}
		// A node without a resolv.conf adds no search domains: the
		// cluster's serve.
		if host, err := node(); err == nil {
			out.Searches = omitDuplicates(append(out.Searches, host.Searches...))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	case extra == nil:
		return nil, nil
	default:
		host, err := node()
		if err != nil {
			return nil, err
		}
		out = host
	}
	if extra != nil {
		out.Servers = omitDuplicates(append(out.Servers, extra.Nameservers...))
		out.Searches = omitDuplicates(append(out.Searches, extra.Searches...))
		out.Options = mergeDNSOptions(out.Options, extra.Options)
	}
	if len(out.Servers) > maxDNSServers {
		out.Servers = out.Servers[:maxDNSServers]
	}
	out.Searches = fitSearches(out.Searches)
	return out, nil
}

// wantsClusterDNS says whether pod's dnsPolicy asks for the cluster's
// DNS server: ClusterFirst (the default) unless on the node's network,
// ClusterFirstWithHostNet.
func wantsClusterDNS(pod *api.Pod) bool {
	switch pod.Spec.DNSPolicy {
	case api.DNSClusterFirstWithHostNet:
		return true
	case "", api.DNSClusterFirst:
		return !pod.Spec.HostNetwork
	}
	return false
}

// ReasonMissingClusterDNS is the reason of the Warning event of a pod that
// asks for the cluster's DNS server on a node that knows none, the
// kubelet's.
const ReasonMissingClusterDNS = "MissingClusterDNS"

// missingClusterDNS is the message of that event, the kubelet's.
func missingClusterDNS(pod *api.Pod) string {
	return fmt.Sprintf("pod: %q. node has no cluster DNS server configured and cannot create Pod using %q policy. Falling back to %q policy.",
		podRef(pod), api.DNSClusterFirst, api.DNSDefault)
}

// omitDuplicates keeps the first of each string.
func omitDuplicates(in []string) []string {
	out := in[:0:0]
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// mergeDNSOptions is have with add's options over those of the same name
// (name or name:value), sorted by name.
func mergeDNSOptions(have []string, add []api.PodDNSConfigOption) []string {
	opts := map[string]string{}
	for _, o := range have {
		if k, v, _ := strings.Cut(o, ":"); k != "" {
			opts[k] = v
		}
	}
	for _, o := range add {
		opts[o.Name] = ""
		if o.Value != nil {
			opts[o.Name] = *o.Value
		}
	}
	if len(opts) == 0 {
		return nil
	}
	out := make([]string, 0, len(opts))
	for k, v := range opts {
		if v != "" {
			k += ":" + v
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// fitSearches keeps the search domains within the resolver's limits.
func fitSearches(s []string) []string {
	if len(s) > maxDNSSearches {
		s = s[:maxDNSSearches]
	}
	for n := len(strings.Join(s, " ")); n > maxDNSSearchLength && len(s) > 0; n = len(strings.Join(s, " ")) {
		s = s[:len(s)-1]
	}
	return s
}

// readResolvConf reads the node's resolv.conf.
func readResolvConf(path string) (*runtime.DNS, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the node's resolv.conf: %w", err)
	}
	return parseResolvConf(b), nil
}

// parseResolvConf reads a resolv.conf's name servers, search domains
// (the last search or domain line, without trailing dots; "." is none)
// and options, as the kubelet reads the node's.
func parseResolvConf(b []byte) *runtime.DNS {
	out := &runtime.DNS{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64*1024)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				out.Servers = append(out.Servers, f[1])
			}
		case "search", "domain":
			out.Searches = nil
			for _, s := range f[1:] {
				if s = strings.TrimSuffix(s, "."); s != "" {
					out.Searches = append(out.Searches, s)
				}
			}
		case "options":
			out.Options = append(out.Options, f[1:]...)
		}
	}
	out.Options = mergeDNSOptions(out.Options, nil)
	return out
}

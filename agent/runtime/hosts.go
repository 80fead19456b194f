package runtime

import (
	"bytes"
	"fmt"
	"strings"
)

// Hosts is a pod's /etc/hosts as the kubelet manages it: the runtime
// writes it once the sandbox has its addresses and mounts it at
// /etc/hosts in each container (but one that mounts a volume there).
type Hosts struct {
	// Path is the file on the node.
	Path string
	// Domain, when set, makes the pod's own line name
	// <hostname>.<Domain> before <hostname> (a pod with a subdomain).
	Domain string
	// NodeHosts is the node's hosts file, copied for a hostNetwork pod.
	NodeHosts []byte
	// Aliases are the pod's hostAliases.
	Aliases []HostAlias
}

// HostAlias is one hostAliases entry: names for an address.
type HostAlias struct {
	IP        string
	Hostnames []string
}

// Headers of the file, the kubelet's.
const (
	hostsHeader            = "# Kubernetes-managed hosts file.\n"
	hostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// Content is the file of a pod named hostname at ips, or of a pod of the
// node's network, as the kubelet writes it: localhost and the IPv6
// names, a line for each of the pod's addresses, then the hostAliases;
// for a hostNetwork pod the node's own file, then the hostAliases.
func (h *Hosts) Content(hostNetwork bool, hostname string, ips []string) []byte {
	var b bytes.Buffer
	if hostNetwork {
		b.WriteString(hostsHeaderHostNetwork)
		b.Write(h.NodeHosts)
	} else {
		b.WriteString(hostsHeader)
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		for _, ip := range ips {
			if h.Domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, h.Domain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
			}
		}
	}
	if len(h.Aliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range h.Aliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}

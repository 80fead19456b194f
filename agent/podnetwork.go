package agent

import (
	"context"
	"fmt"
	"net"
	"net/url"

	"github.com/berth-dev/berth/agent/podnet"
	"github.com/berth-dev/berth/client"
)

// Pod network modes (--pod-network).
const (
	// PodNetworkHostGW routes every other node's podCIDR via its
	// InternalIP, turns IP forwarding on, and serves the node-local DNS
	// forwarder on the pod gateway.
	PodNetworkHostGW = "host-gw"
	// PodNetworkNone leaves the node's network alone.
	PodNetworkNone = "none"
)

// DefaultClusterDNSPort is the cluster DNS server's port when
// --cluster-dns names none: `berth server`'s --dns-listen default.
const DefaultClusterDNSPort = "10053"

// podNetwork is the mode cfg asks for: host-gw for a runtime whose pods
// have addresses of their own, none for the exec runtime's host
// processes, unless PodNetwork says.
func (cfg Config) podNetwork() string {
	if cfg.PodNetwork != "" {
		return cfg.PodNetwork
	}
	if cfg.Runtime == RuntimeExec || cfg.Runtime == "" {
		return PodNetworkNone
	}
	return PodNetworkHostGW
}

// checkPodNetwork refuses an unknown mode or a cluster DNS address that
// is not host:port.
func (cfg Config) checkPodNetwork() error {
	switch cfg.PodNetwork {
	case "", PodNetworkHostGW, PodNetworkNone:
	default:
		return fmt.Errorf("--pod-network %q: want %s or %s", cfg.PodNetwork, PodNetworkHostGW, PodNetworkNone)
	}
	if cfg.ClusterDNS != "" {
		if _, _, err := net.SplitHostPort(cfg.ClusterDNS); err != nil {
			return fmt.Errorf("--cluster-dns %q: want host:port: %w", cfg.ClusterDNS, err)
		}
	}
	return nil
}

// clusterDNS is where the node-local forwarder sends pods' queries:
// --cluster-dns, else the control plane's host at the DNS server's
// default port.
func (cfg Config) clusterDNS() (string, error) {
	if cfg.ClusterDNS != "" {
		return cfg.ClusterDNS, nil
	}
	u, err := url.Parse(cfg.Server)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("--cluster-dns: no host in --server %q to default to", cfg.Server)
	}
	return net.JoinHostPort(u.Hostname(), DefaultClusterDNSPort), nil
}

// runPodNetwork joins the node to the other nodes' pods (host-gw) until
// ctx ends.
func (a *Agent) runPodNetwork(ctx context.Context, c *client.Client) error {
	upstream, err := a.cfg.clusterDNS()
	if err != nil {
		return err
	}
	m, err := podnet.NewManager(podnet.Options{
		Client:     c,
		NodeName:   a.cfg.NodeName,
		PodCIDR:    a.cfg.PodCIDR,
		ClusterDNS: upstream,
		Clock:      a.cfg.Clock,
		Logger:     a.log,
	})
	if err != nil {
		return err
	}
	return m.Run(ctx)
}

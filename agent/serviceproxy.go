package agent

import (
	"context"
	"fmt"

	"github.com/berth-dev/berth/agent/proxy"
	"github.com/berth-dev/berth/client"
)

// Service proxy modes (--service-proxy).
const (
	// ServiceProxyNFTables keeps the node's nftables table of Service
	// rules, as kube-proxy's nftables mode.
	ServiceProxyNFTables = "nftables"
	// ServiceProxyNone leaves Services to something else.
	ServiceProxyNone = "none"
)

// serviceProxy is the mode cfg asks for: nftables where the agent also
// runs the pod network (its nodes' pods have addresses of their own),
// none otherwise, unless ServiceProxy says.
func (cfg Config) serviceProxy() string {
	if cfg.ServiceProxy != "" {
		return cfg.ServiceProxy
	}
	if cfg.podNetwork() == PodNetworkHostGW {
		return ServiceProxyNFTables
	}
	return ServiceProxyNone
}

func (cfg Config) checkServiceProxy() error {
	switch cfg.ServiceProxy {
	case "", ServiceProxyNFTables, ServiceProxyNone:
		return nil
	}
	return fmt.Errorf("--service-proxy %q: want %s or %s", cfg.ServiceProxy, ServiceProxyNFTables, ServiceProxyNone)
}

// runServiceProxy keeps the node's Service rules until ctx ends.
func (a *Agent) runServiceProxy(ctx context.Context, c *client.Client) error {
	return proxy.New(proxy.Options{Client: c, NodeName: a.cfg.NodeName, Syncer: proxy.NewSyncer(-1), HealthCheckAddress: a.cfg.NodeIP,
		Clock: a.cfg.Clock, Logger: a.log}).Run(ctx)
}

// CleanupServiceProxy removes the service proxy's nftables tables, as
// `berth agent --cleanup` does.
func CleanupServiceProxy() error { return proxy.NewSyncer(-1).Cleanup() }

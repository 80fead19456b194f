package podnet

import (
	"log/slog"
	"time"

	"github.com/vishvananda/netns"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// DefaultResyncPeriod is how often the routes are checked against the
// Nodes when none changes, to put back a route someone removed.
const DefaultResyncPeriod = time.Minute

// DNSPort is where pods send their queries: the node-local forwarder's
// port on the gateway address.
const DNSPort = 53

var nodeKind = api.KindOf(&api.Node{})

// Options configure a Manager.
type Options struct {
	// Client reads the Nodes; a node's credential may.
	Client *client.Client
	// NodeName is this node's Node.
	NodeName string
	// PodCIDR is this node's pod range when its Node has no
	// spec.podCIDR (the agent's --pod-cidr); the Node's wins.
	PodCIDR string
	// ClusterDNS is the cluster DNS server (host:port) the node-local
	// forwarder sends pods' queries to; empty runs no forwarder.
	ClusterDNS string
	// NetNS is the network namespace the routes, the forwarding sysctl
	// and the forwarder live in; nil: the process's own.
	NetNS *netns.NsHandle
	// ResyncPeriod: DefaultResyncPeriod when zero.
	ResyncPeriod time.Duration
	Clock        clock.WithTicker
	Logger       *slog.Logger
}

package controlplane

import (
	"cmp"
	"fmt"

	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/reconcile/nodeipam"
	"github.com/berth-dev/berth/store"
)

// Defaults of the node IPAM flags, as k3s's.
const (
	DefaultClusterCIDR      = nodeipam.DefaultClusterCIDR
	DefaultNodeCIDRMaskSize = nodeipam.DefaultNodeMaskSize
)

// nodeRange is the range node podCIDRs are cut from, nil when
// --cluster-cidr is empty (no node IPAM).
func (cfg Config) nodeRange() (*nodeipam.Range, error) {
	if cfg.ClusterCIDR == "" {
		return nil, nil
	}
	rng, err := nodeipam.NewRange(cfg.ClusterCIDR, cmp.Or(cfg.NodeCIDRMaskSize, DefaultNodeCIDRMaskSize))
	if err != nil {
		return nil, fmt.Errorf("--cluster-cidr, --node-cidr-mask-size: %w", err)
	}
	return rng, nil
}

// nodeIPAMControllers is the node IPAM controller when cfg names a cluster
// CIDR, none otherwise (Check has refused a bad one).
func nodeIPAMControllers(st *store.Store, cfg Config, events *event.Writer) []*reconcile.Controller {
	rng, err := cfg.nodeRange()
	if err != nil || rng == nil {
		return nil
	}
	return []*reconcile.Controller{nodeipam.NewController(st, rng, nodeipam.Options{Clock: cfg.Clock, Logger: cfg.Logger,
		Events: events.Recorder(nodeipam.EventComponent, "")})}
}

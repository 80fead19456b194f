package controlplane

import (
	"cmp"
	"context"
	"fmt"

	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/nodeipam"
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

// initNodeIPAM is the node IPAM controller when the config names a
// cluster CIDR, none otherwise (Check has refused a bad one).
func initNodeIPAM(_ context.Context, d Deps) (*reconcile.Controller, error) {
	rng, err := d.Config.nodeRange()
	if err != nil || rng == nil {
		return nil, nil
	}
	return nodeipam.NewController(d.Store, rng, nodeipam.Options{Clock: d.Clock, Logger: d.Log,
		Events: d.Recorder(nodeipam.EventComponent)}), nil
}

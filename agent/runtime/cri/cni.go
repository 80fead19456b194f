package cri

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/berth-dev/berth/agent/podnet"
)

// Names shared with the rest of the node's networking.
const (
	// BridgeName is the node's pod bridge.
	BridgeName = "berth0"
	// NetworkName is the CNI network of the pods.
	NetworkName = "berth"
	// cniConfFile is the file the network is written to.
	cniConfFile = "10-berth.conflist"
)

// CNIConfig is the CNI network list of a node's pods: the bridge berth0
// with its gateway at the first address of podCIDR, addresses from
// host-local, and portmap for hostPort (loopback is the runtime's own).
// ipMasq has the bridge masquerade what pods send off the podCIDR: for a
// node that joins no pod network between nodes (with host-gw, traffic to
// other nodes' pods keeps its source, and the node's own rules masquerade
// what leaves the cluster).
func CNIConfig(podCIDR string, ipMasq bool) ([]byte, error) {
	gw, err := podnet.Gateway(podCIDR)
	if err != nil {
		return nil, err
	}
	p := netip.MustParsePrefix(podCIDR).Masked()
	route := "0.0.0.0/0"
	if p.Addr().Is6() {
		route = "::/0"
	}
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       NetworkName,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      BridgeName,
				"isGateway":   true,
				"ipMasq":      ipMasq,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": [][]map[string]string{{{"subnet": p.String(), "gateway": gw.String()}}},
					"routes": []map[string]string{{"dst": route}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// WriteCNIConfig writes the network of podCIDR into dir, where the runtime
// reads it, unless it is there already. It says whether it wrote.
func WriteCNIConfig(dir, podCIDR string, ipMasq bool) (bool, error) {
	b, err := CNIConfig(podCIDR, ipMasq)
	if err != nil {
		return false, err
	}
	path := filepath.Join(dir, cniConfFile)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}

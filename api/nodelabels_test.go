package api_test

import (
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestNodeMaySetLabel(t *testing.T) {
	for key, want := range map[string]bool{
		"disk":                                      true,
		"example.com/rack":                          true,
		"berth.dev/pool":                            true,
		api.LabelHostname:                           true,
		api.LabelOS:                                 true,
		api.LabelArch:                               true,
		api.LabelTopologyZone:                       true,
		"topology.kubernetes.io/region":             true,
		"node.kubernetes.io/instance-type":          true,
		"node.kubernetes.io/anything":               true,
		"sub.node.kubernetes.io/anything":           true,
		"kubelet.kubernetes.io/x":                   true,
		"node-restriction.kubernetes.io/pci":        false,
		"team.node-restriction.kubernetes.io/gpu":   false,
		"node-role.kubernetes.io/control-plane":     false,
		"node-role.kubernetes.io/worker":            false,
		"kubernetes.io/unknown":                     false,
		"topology.kubernetes.io/rack":               false,
		"k8s.io/x":                                  false,
		"sub.k8s.io/x":                              false,
		"notkubernetes.io/x":                        true,
		"node-restriction.kubernetes.io.evil.com/x": true,
	} {
		if got := api.NodeMaySetLabel(key); got != want {
			t.Errorf("NodeMaySetLabel(%q) = %v, want %v", key, got, want)
		}
	}
}

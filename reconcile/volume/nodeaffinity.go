package volume

import (
	"github.com/berth-dev/berth/api"
)

// hostnameAffinity is the node affinity of a volume on one node.
func hostnameAffinity(node string) *api.VolumeNodeAffinity {
	return &api.VolumeNodeAffinity{Required: &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{
		MatchExpressions: []api.NodeSelectorRequirement{{Key: api.LabelHostname, Operator: api.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

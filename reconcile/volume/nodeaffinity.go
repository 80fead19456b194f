package volume

import (
	"slices"
	"strconv"

	"github.com/berth-dev/berth/api"
)

// fieldNodeName is the one node field a node selector term may match.
const fieldNodeName = "metadata.name"

// nodeMatches reports whether a node with name and labels satisfies sel, a
// volume's required node affinity: an OR of terms, each an AND of
// requirements. A nil selector admits every node; a selector with no terms
// admits none, as in Kubernetes.
func nodeMatches(sel *api.NodeSelector, name string, labels map[string]string) bool {
	if sel == nil {
		return true
	}
	for i := range sel.NodeSelectorTerms {
		t := &sel.NodeSelectorTerms[i]
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			continue
		}
		ok := true
		for _, r := range t.MatchExpressions {
			v, has := labels[r.Key]
			if !requirementMatches(r, v, has) {
				ok = false
				break
			}
		}
		for _, r := range t.MatchFields {
			if !ok {
				break
			}
			ok = r.Key == fieldNodeName && requirementMatches(r, name, true)
		}
		if ok {
			return true
		}
	}
	return false
}

func requirementMatches(r api.NodeSelectorRequirement, v string, has bool) bool {
	switch r.Operator {
	case api.NodeSelectorOpIn:
		return has && slices.Contains(r.Values, v)
	case api.NodeSelectorOpNotIn:
		return !has || !slices.Contains(r.Values, v)
	case api.NodeSelectorOpExists:
		return has
	case api.NodeSelectorOpDoesNotExist:
		return !has
	case api.NodeSelectorOpGt, api.NodeSelectorOpLt:
		if !has || len(r.Values) != 1 {
			return false
		}
		n, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == api.NodeSelectorOpGt {
			return n > want
		}
		return n < want
	}
	return false
}

// hostnameAffinity is the node affinity of a volume on one node.
func hostnameAffinity(node string) *api.VolumeNodeAffinity {
	return &api.VolumeNodeAffinity{Required: &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{
		MatchExpressions: []api.NodeSelectorRequirement{{Key: api.LabelHostname, Operator: api.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

package api

// ToleratesTaint is Kubernetes' matching rule between a toleration and a
// taint: an empty effect matches every effect, an empty key (with Exists)
// every key, and the operator Equal (or none) compares values. The
// scheduler and the node lifecycle controller both decide by it.
func (t *Toleration) ToleratesTaint(taint *Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", TolerationOpEqual:
		return t.Value == taint.Value
	case TolerationOpExists:
		return true
	}
	return false
}

// LocalVolumeNode is the one node a persistent volume lives on: the single
// hostname (or node name) its required node affinity names, as the
// local-path provisioner writes it; "" for a volume that names no single
// node. The volume controller and the agent that owns the directory both
// go by it.
func LocalVolumeNode(pv *PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) != 1 {
		return ""
	}
	for _, r := range terms[0].MatchExpressions {
		if r.Key == LabelHostname && r.Operator == NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	for _, r := range terms[0].MatchFields {
		if r.Key == "metadata.name" && r.Operator == NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

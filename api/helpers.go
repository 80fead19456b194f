package api

import (
	"path/filepath"
	"strings"
	"time"
)

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

// LocalVolumePath is the directory of a volume that lives on a node's
// disk (spec.local or spec.hostPath), "" for any other.
func LocalVolumePath(pv *PersistentVolume) string {
	switch {
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	}
	return ""
}

// LocalPathReclaimable reports whether a volume's directory may be removed
// or wiped by its reclaim policy: a clean absolute path other than "/",
// and either one the local-path provisioner made (named for the volume, as
// it names them) or one under the node's local-path root. Anything else is
// the user's to clean. The volume controller and the node's agent both go
// by it.
func LocalPathReclaimable(pv *PersistentVolume, root string) bool {
	dir := LocalVolumePath(pv)
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
		return false
	}
	if pv.Annotations[AnnotationProvisionedBy] == LocalPathProvisioner && filepath.Base(dir) == pv.Name {
		return true
	}
	return root != "" && strings.HasPrefix(dir, root+string(filepath.Separator))
}

// Terminating reports whether the namespace is being deleted: marked for
// deletion, or in phase Terminating.
func (ns *Namespace) Terminating() bool {
	return ns.DeletionTimestamp != nil || ns.Status.Phase == NamespaceTerminating
}

// Finished reports whether a pod has ended for good (Succeeded or
// Failed): it holds nothing on its node, and uses none of its claims.
func (p *Pod) Finished() bool {
	return p.Status.Phase == PodSucceeded || p.Status.Phase == PodFailed
}

// Ready reports whether the pod's Ready condition is True: the pod counts
// as an endpoint, toward its controller's ready replicas, and as healthy
// for its disruption budget.
func (p *Pod) Ready() bool {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == PodReady {
			return p.Status.Conditions[i].Status == ConditionTrue
		}
	}
	return false
}

// AvailableAfter reports whether the pod has been ready for minReady at
// now (Kubernetes' IsPodAvailable) and, if it is ready but not yet
// available, how long until it is: what a controller's available count
// and its next look are made of.
func (p *Pod) AvailableAfter(minReady time.Duration, now time.Time) (bool, time.Duration) {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type != PodReady {
			continue
		}
		if c.Status != ConditionTrue {
			return false, 0
		}
		if minReady <= 0 {
			return true, 0
		}
		if c.LastTransitionTime.IsZero() {
			return false, 0
		}
		if left := c.LastTransitionTime.Add(minReady).Sub(now); left > 0 {
			return false, left
		}
		return true, 0
	}
	return false, 0
}

// SystemNamespace reports whether a namespace is one that may not be
// deleted: default, kube-system and kube-public, as in Kubernetes.
// kube-node-lease may go, as in Kubernetes: agents then write their
// Node's status at every heartbeat, and the server makes it again when it
// starts.
func SystemNamespace(name string) bool {
	return name == NamespaceDefault || name == NamespaceSystem || name == NamespacePublic
}

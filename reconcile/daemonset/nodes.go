package daemonset

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/sched"
)

// fieldNodeName is the node field a daemon pod's node affinity names.
const fieldNodeName = "metadata.name"

// defaultTolerations are the tolerations Kubernetes adds to every daemon
// pod (AddOrUpdateDaemonPodTolerations): it stays on a node that is not
// ready or unreachable, and is placed on one under pressure or cordoned.
var defaultTolerations = []api.Toleration{
	{Key: api.TaintNodeNotReady, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoExecute},
	{Key: api.TaintNodeUnreachable, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoExecute},
	{Key: api.TaintNodeDiskPressure, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule},
	{Key: api.TaintNodeMemoryPressure, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule},
	{Key: api.TaintNodePIDPressure, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule},
	{Key: api.TaintNodeUnschedulable, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule},
}

// hostNetworkToleration is added to a daemon pod with hostNetwork, which
// needs no pod network to run.
var hostNetworkToleration = api.Toleration{Key: api.TaintNodeNetworkUnavailable, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule}

// tolerationsOf are the default tolerations of a daemon pod of spec.
func tolerationsOf(spec *api.PodSpec) []api.Toleration {
	if spec.HostNetwork {
		return append(slices.Clone(defaultTolerations), hostNetworkToleration)
	}
	return defaultTolerations
}

// withDefaultTolerations adds the default tolerations a pod spec does not
// already have.
func withDefaultTolerations(spec *api.PodSpec) {
	for _, d := range tolerationsOf(spec) {
		if !slices.ContainsFunc(spec.Tolerations, func(t api.Toleration) bool {
			return t.Key == d.Key && t.Effect == d.Effect && t.Operator == d.Operator && t.Value == d.Value
		}) {
			spec.Tolerations = append(spec.Tolerations, d)
		}
	}
}

// nodeAffinityFor is the required node affinity that places a daemon pod
// on one node, as Kubernetes (≥1.12) does rather than setting nodeName:
// the scheduler places the pod, so that its resources are counted and
// preemption may make room. It replaces the template's required affinity,
// which the node was checked against.
func nodeAffinityFor(spec *api.PodSpec, node string) {
	sel := &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{
		MatchFields: []api.NodeSelectorRequirement{{Key: fieldNodeName, Operator: api.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	if spec.Affinity == nil {
		spec.Affinity = &api.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &api.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
}

// targetNode is the node a daemon pod is for: its node once bound, else
// the node its affinity names.
func targetNode(p *api.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range t.MatchFields {
			if r.Key == fieldNodeName && r.Operator == api.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// placement says whether a daemon pod should run on a node (a new one
// may be placed there) and whether one already there may stay, as
// Kubernetes' NodeShouldRunDaemonPod: the node selector and required node
// affinity must admit the node; a NoSchedule or NoExecute taint the pod
// (with its default tolerations) does not tolerate keeps a new pod off,
// and a NoExecute one evicts the pod there.
func placement(tpl *api.PodSpec, node *api.Node) (shouldRun, shouldContinue bool) {
	if tpl.NodeName != "" && tpl.NodeName != node.Name {
		return false, false
	}
	for k, v := range tpl.NodeSelector {
		if node.Labels[k] != v {
			return false, false
		}
	}
	if a := tpl.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if !sched.NodeSelectorMatches(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, node.Name, node.Labels) {
			return false, false
		}
	}
	shouldRun, shouldContinue = true, true
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != api.TaintEffectNoSchedule && taint.Effect != api.TaintEffectNoExecute {
			continue
		}
		if tolerated(tpl.Tolerations, taint) || tolerated(tolerationsOf(tpl), taint) {
			continue
		}
		shouldRun = false
		if taint.Effect == api.TaintEffectNoExecute {
			shouldContinue = false
		}
	}
	return shouldRun, shouldContinue
}

func tolerated(ts []api.Toleration, taint *api.Taint) bool {
	for i := range ts {
		if ts[i].ToleratesTaint(taint) {
			return true
		}
	}
	return false
}

// newPod is the daemon pod of a node: the template with the revision's
// hash label, the default tolerations and the node affinity for the node.
func newPod(ds *api.DaemonSet, tpl *api.PodTemplateSpec, hash, node string) *api.Pod {
	t := tpl.DeepCopy()
	prefix := ds.Name + "-"
	if len(prefix) > 58 {
		prefix = prefix[:58]
	}
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ds.Namespace,
			GenerateName:    prefix,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind.GVK)},
		},
		Spec: t.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[api.LabelControllerRevisionHash] = hash
	withDefaultTolerations(&pod.Spec)
	nodeAffinityFor(&pod.Spec, node)
	api.Default(pod)
	return pod
}

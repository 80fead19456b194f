package sim

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// The mix of constraints Options.Mix adds: node labels and a taint, and
// per ReplicaSet a node selector, anti-affinity or a toleration.
const (
	// DiskLabel is "ssd" on every other node.
	DiskLabel = "sim.berth.dev/disk"
	// ZoneLabel spreads the nodes over ten zones.
	ZoneLabel = api.LabelTopologyZone
	// DedicatedTaint keeps pods without its toleration off every tenth
	// node (NoSchedule).
	DedicatedTaint = "sim.berth.dev/dedicated"
)

// mixNode gives node i its labels and taint.
func mixNode(n *api.Node, i int) {
	n.Labels[ZoneLabel] = fmt.Sprintf("zone-%d", i%10)
	if i%2 == 0 {
		n.Labels[DiskLabel] = "ssd"
	}
	if i%10 == 0 {
		n.Spec.Taints = []api.Taint{{Key: DedicatedTaint, Value: "batch", Effect: api.TaintEffectNoSchedule}}
	}
}

// spreadPodSpec gives a ReplicaSet's pods what kube-scheduler's
// PodTopologySpread and InterPodAffinity read: at most one pod more on a
// node than on the emptiest (DoNotSchedule), and a preference for zones
// holding fewer of them (on nodes without zones it changes no score).
func spreadPodSpec(spec *api.PodSpec, labels map[string]string) {
	own := &metav1.LabelSelector{MatchLabels: map[string]string{"app": labels["app"]}}
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: hostnameLabel, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: own,
	}}
	spec.Affinity = &api.Affinity{PodAntiAffinity: &api.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: own, TopologyKey: ZoneLabel},
		}},
	}}
}

// mixPodSpec gives the pods of ReplicaSet k, of replicas pods over nodes
// nodes, their constraint, by k modulo 4: none (so not on the tainted
// nodes); a node selector for ssd nodes; anti-affinity, one pod a node,
// with the toleration (when the ReplicaSet has no more pods than there
// are nodes; otherwise only the toleration); the toleration.
func mixPodSpec(spec *api.PodSpec, k int, labels map[string]string, replicas int32, nodes int) {
	tolerate := []api.Toleration{{Key: DedicatedTaint, Operator: api.TolerationOpEqual, Value: "batch", Effect: api.TaintEffectNoSchedule}}
	switch k % 4 {
	case 1:
		spec.NodeSelector = map[string]string{DiskLabel: "ssd"}
	case 2:
		spec.Tolerations = tolerate
		if int(replicas) <= nodes {
			spec.Affinity = &api.Affinity{PodAntiAffinity: &api.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []api.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": labels["app"]}},
					TopologyKey:   hostnameLabel,
				}},
			}}
		}
	case 3:
		spec.Tolerations = tolerate
	}
}

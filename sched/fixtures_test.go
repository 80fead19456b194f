package sched

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// makeNode returns a Ready node with the hostname label and 4 cpu, 16Gi,
// 100Gi ephemeral storage and 110 pods allocatable, changed by opts.
func makeNode(name string, opts ...func(*api.Node)) *api.Node {
	n := &api.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{api.LabelHostname: name}},
		Status: api.NodeStatus{
			Allocatable: api.ResourceList{
				api.ResourceCPU:              resource.MustParse("4"),
				api.ResourceMemory:           resource.MustParse("16Gi"),
				api.ResourceEphemeralStorage: resource.MustParse("100Gi"),
				api.ResourcePods:             resource.MustParse("110"),
			},
			Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func allocatable(cpu, memory string, pods int) func(*api.Node) {
	return func(n *api.Node) {
		n.Status.Allocatable = api.ResourceList{
			api.ResourceCPU:    resource.MustParse(cpu),
			api.ResourceMemory: resource.MustParse(memory),
			api.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
		}
	}
}

func nodeLabels(kv ...string) func(*api.Node) {
	return func(n *api.Node) {
		for i := 0; i < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func noHostname(n *api.Node) { delete(n.Labels, api.LabelHostname) }

func taints(ts ...api.Taint) func(*api.Node) {
	return func(n *api.Node) { n.Spec.Taints = append(n.Spec.Taints, ts...) }
}

func taint(key, value string, effect api.TaintEffect) api.Taint {
	return api.Taint{Key: key, Value: value, Effect: effect}
}

func condition(t api.NodeConditionType, s api.ConditionStatus) func(*api.Node) {
	return func(n *api.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == t {
				n.Status.Conditions[i].Status = s
				return
			}
		}
		n.Status.Conditions = append(n.Status.Conditions, api.NodeCondition{Type: t, Status: s})
	}
}

func cordoned(n *api.Node) { n.Spec.Unschedulable = true }

// makePod returns a pending pod in namespace default with one container
// that requests nothing, changed by opts.
func makePod(name string, opts ...func(*api.Pod)) *api.Pod {
	p := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       api.PodSpec{Containers: []api.Container{{Name: "c", Image: "img"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func requests(cpu, memory string) func(*api.Pod) {
	return func(p *api.Pod) {
		r := api.ResourceList{}
		if cpu != "" {
			r[api.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			r[api.ResourceMemory] = resource.MustParse(memory)
		}
		p.Spec.Containers[0].Resources.Requests = r
	}
}

func ephemeral(q string) func(*api.Pod) {
	return func(p *api.Pod) {
		if p.Spec.Containers[0].Resources.Requests == nil {
			p.Spec.Containers[0].Resources.Requests = api.ResourceList{}
		}
		p.Spec.Containers[0].Resources.Requests[api.ResourceEphemeralStorage] = resource.MustParse(q)
	}
}

func ports(ps ...api.ContainerPort) func(*api.Pod) {
	return func(p *api.Pod) { p.Spec.Containers[0].Ports = ps }
}

func podLabels(kv ...string) func(*api.Pod) {
	return func(p *api.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func ownedBy(uid string) func(*api.Pod) {
	return func(p *api.Pod) {
		t := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + uid, UID: types.UID(uid), Controller: &t}}
	}
}

func selector(kv ...string) func(*api.Pod) {
	return func(p *api.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func tolerate(ts ...api.Toleration) func(*api.Pod) {
	return func(p *api.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, ts...) }
}

func requiredTerms(terms ...api.NodeSelectorTerm) func(*api.Pod) {
	return func(p *api.Pod) {
		p.Spec.Affinity = &api.Affinity{NodeAffinity: &api.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &api.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
}

func expr(key string, op api.NodeSelectorOperator, values ...string) api.NodeSelectorRequirement {
	return api.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func antiAffinity(namespaces []string, kv ...string) func(*api.Pod) {
	return func(p *api.Pod) {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for i := 0; i < len(kv); i += 2 {
			sel.MatchLabels[kv[i]] = kv[i+1]
		}
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &api.Affinity{}
		}
		p.Spec.Affinity.PodAntiAffinity = &api.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []api.PodAffinityTerm{{
			LabelSelector: sel, Namespaces: namespaces, TopologyKey: api.LabelHostname,
		}}}
	}
}

// placed returns the NodeInfo of node with pods placed on it, alone.
func placed(node *api.Node, pods ...*api.Pod) *NodeInfo {
	n := NewNodeInfo(node)
	for _, p := range pods {
		n.addPod(NewPodInfo(p).placed())
	}
	return n
}

// nodePods is a node and the pods to place on it, for cluster.
type nodePods struct {
	node *api.Node
	pods []*api.Pod
}

func on(node *api.Node, pods ...*api.Pod) nodePods { return nodePods{node, pods} }

// cluster returns Nodes with the pods placed.
func cluster(nps ...nodePods) *Nodes {
	ns := NewNodes()
	for _, np := range nps {
		ns.Set(np.node)
		for _, p := range np.pods {
			ns.AddPod(np.node.Name, NewPodInfo(p).placed())
		}
	}
	return ns
}

// reasonsOf renders a status for table comparisons: "" when it passed.
func reasonsOf(st *Status) string {
	if st == nil {
		return ""
	}
	return fmt.Sprint(st.Reasons())
}

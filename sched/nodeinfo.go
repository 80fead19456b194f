package sched

import (
	"github.com/berth-dev/berth/api"
	"strings"
)

// Resources are the amounts the scheduler accounts per node, in the units
// Kubernetes compares them in: millicores, bytes, bytes and pods.
type Resources struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	Pods             int64
}

func (r *Resources) add(o Resources) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.Pods += o.Pods
}

func (r *Resources) sub(o Resources) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.Pods -= o.Pods
}

// Well-known taints the node lifecycle controller sets for node conditions;
// api holds the others.
const (
	TaintNodeMemoryPressure = "node.kubernetes.io/memory-pressure"
	TaintNodeDiskPressure   = "node.kubernetes.io/disk-pressure"
	TaintNodePIDPressure    = "node.kubernetes.io/pid-pressure"
)

// NodeInfo is what the scheduler knows of one node: the node's facts,
// flattened out of the API object when it changes, and the sums of the pods
// placed on it. The filters and scores read only this, so a scheduling
// cycle reads no map per node and makes no allocations for an ordinary pod.
//
// The fields every cycle reads come first, in the first three cache
// lines: on a large cluster the cost of a cycle is mostly the memory it
// touches. The rest is read only for nodes whose flags say they have it.
//
// A NodeInfo belongs to whoever built it (the cache, or a test); it is not
// safe for concurrent use.
type NodeInfo struct {
	// Allocatable is what pods may request in total.
	Allocatable Resources
	// Requested sums the requests of the pods on the node; Pods counts them.
	Requested Resources
	// NonZeroCPU and NonZeroMemory sum the pods' requests with
	// kube-scheduler's defaults (100m, 200Mi) for containers that request
	// nothing, so that LeastAllocated still spreads pods without requests.
	NonZeroCPU    int64
	NonZeroMemory int64
	// cpuScale and memoryScale are 100/allocatable, to score without a
	// division per node.
	cpuScale, memoryScale float64
	flags                 nodeFlags
	// index numbers the node in its Nodes, for the per-controller columns
	// that spreading reads; zone numbers its zone label's value in its
	// Nodes (see Nodes.setZone).
	index int32
	zone  int32
	// memo keeps the last allocation scores with the sums they were
	// computed from: a run of alike pods finds most nodes unchanged since
	// the previous pod, and reuses the score instead of dividing again.
	memo scoreMemo

	// conditionTaints are the NoSchedule taints Kubernetes' node lifecycle
	// controller would set for the node's conditions (not ready,
	// unreachable, pressure); taints are the node's own NoSchedule and
	// NoExecute taints; preferTaints its PreferNoSchedule ones.
	conditionTaints []taintEntry
	taints          []taintEntry
	preferTaints    []api.Taint
	// ports are the host ports in use, one entry per pod port.
	ports []HostPort
	// podNetwork: the node's pods have addresses of their own, so only
	// their hostPorts take the node's ports (podNetworkRuntime).
	podNetwork bool
	pods       []*placedPod
	antiPods   []*placedPod

	node   *api.Node
	name   string
	labels map[string]string
	// labelPods counts the pods on the node by namespace and label, so
	// that an anti-affinity term rules a node out without reading its pods
	// when no pod there has one of the labels it requires. They are kept
	// once labelsCounted, from the first pod with anti-affinity on (see
	// Nodes.countPodLabels): until then no term asks.
	labelPods     map[podLabel]int32
	labelsCounted bool
	// antiTermPods counts the pods on the node by anti-affinity term key.
	antiTermPods map[string]int32
	// scoringPods counts the pods whose inter-pod terms score;
	// terminating the pods being deleted.
	scoringPods int32
	terminating int32
}

// podLabel is one label of pods in one namespace.
type podLabel struct{ namespace, key, value string }

// countLabels adds d to the counts of the pod's labels.
func (n *NodeInfo) countLabels(p *placedPod, d int32) {
	if len(p.Labels) == 0 || !n.labelsCounted {
		return
	}
	if n.labelPods == nil {
		n.labelPods = map[podLabel]int32{}
	}
	for k, v := range p.Labels {
		l := podLabel{p.Namespace, k, v}
		if c := n.labelPods[l] + d; c > 0 {
			n.labelPods[l] = c
		} else {
			delete(n.labelPods, l)
		}
	}
}

// nodeFlags say which of its rarer features a node has, so that a filter
// that can only reject such nodes is not even called for the others.
type nodeFlags uint32

const (
	flagUnschedulable nodeFlags = 1 << iota
	flagConditionTaints
	flagTaints
	flagPreferTaints
	flagPorts
	flagAntiPods
	flagHostname
	// flagZone: the node has a topology.kubernetes.io/zone label.
	flagZone
	// flagScoringPods: a pod on the node has inter-pod affinity terms
	// that count in other pods' scores.
	flagScoringPods
)

func (n *NodeInfo) setFlag(f nodeFlags, on bool) {
	if on {
		n.flags |= f
	} else {
		n.flags &^= f
	}
}

// taintEntry is a taint with the status that rejects a node for it, made
// once when the node changes rather than on every rejection.
type taintEntry struct {
	taint  api.Taint
	status *Status
}

// NewNodeInfo returns the NodeInfo of node with pods placed on it, outside
// any Nodes: for looking at one node (tests, explanations). What the
// framework schedules over is a Nodes.
func NewNodeInfo(node *api.Node, pods ...*PodInfo) *NodeInfo {
	n := &NodeInfo{labelsCounted: true}
	n.setNode(node)
	for _, p := range pods {
		n.addPod(p.placed())
	}
	return n
}

// Node returns the node object the NodeInfo was last set from; nil for a
// node the cache has seen pods of but not the node itself.
func (n *NodeInfo) Node() *api.Node { return n.node }

// Name returns the node's name.
func (n *NodeInfo) Name() string { return n.name }

// setNode refreshes the facts taken from the node object and keeps the
// pods placed on it.
func (n *NodeInfo) setNode(node *api.Node) {
	n.node = node
	n.name = node.Name
	n.labels = node.Labels
	_, hostname := node.Labels[api.LabelHostname]
	n.setFlag(flagHostname, hostname)
	n.setFlag(flagUnschedulable, node.Spec.Unschedulable)
	n.podNetwork = podNetworkRuntime(node.Status.NodeInfo.ContainerRuntimeVersion)
	alloc := node.Status.Allocatable
	if len(alloc) == 0 {
		// A node that reports only its capacity offers all of it.
		alloc = node.Status.Capacity
	}
	n.Allocatable = resourcesOf(alloc)
	n.cpuScale, n.memoryScale = scale(n.Allocatable.MilliCPU), scale(n.Allocatable.Memory)
	n.memo = scoreMemo{}
	n.taints, n.preferTaints = n.taints[:0], n.preferTaints[:0]
	for _, t := range node.Spec.Taints {
		switch t.Effect {
		case api.TaintEffectNoSchedule, api.TaintEffectNoExecute:
			n.taints = append(n.taints, taintEntry{taint: t, status: taintStatus(t)})
		case api.TaintEffectPreferNoSchedule:
			n.preferTaints = append(n.preferTaints, t)
		}
	}
	n.conditionTaints = n.conditionTaints[:0]
	for _, key := range conditionTaintKeys(node) {
		t := api.Taint{Key: key, Effect: api.TaintEffectNoSchedule}
		n.conditionTaints = append(n.conditionTaints, taintEntry{taint: t, status: newConditionStatus(t)})
	}
	n.setFlag(flagTaints, len(n.taints) > 0)
	n.setFlag(flagPreferTaints, len(n.preferTaints) > 0)
	n.setFlag(flagConditionTaints, len(n.conditionTaints) > 0)
}

func scale(capacity int64) float64 {
	if capacity == 0 {
		return 0
	}
	return float64(MaxNodeScore) / float64(capacity)
}

func resourcesOf(list api.ResourceList) Resources {
	var r Resources
	if q, ok := list[api.ResourceCPU]; ok {
		r.MilliCPU = q.MilliValue()
	}
	if q, ok := list[api.ResourceMemory]; ok {
		r.Memory = q.Value()
	}
	if q, ok := list[api.ResourceEphemeralStorage]; ok {
		r.EphemeralStorage = q.Value()
	}
	if q, ok := list[api.ResourcePods]; ok {
		r.Pods = q.Value()
	}
	return r
}

// conditionTaintKeys lists the taints Kubernetes sets on a node for its
// conditions (TaintNodesByCondition). A node that has not reported Ready
// yet is not ready, as the kubelet's registration taint makes it.
func conditionTaintKeys(node *api.Node) []string {
	var keys []string
	ready := false
	for _, c := range node.Status.Conditions {
		switch c.Type {
		case api.NodeReady:
			ready = true
			switch c.Status {
			case api.ConditionFalse:
				keys = append(keys, api.TaintNodeNotReady)
			case api.ConditionUnknown:
				keys = append(keys, api.TaintNodeUnreachable)
			}
		case api.NodeMemoryPressure:
			if c.Status == api.ConditionTrue {
				keys = append(keys, TaintNodeMemoryPressure)
			}
		case api.NodeDiskPressure:
			if c.Status == api.ConditionTrue {
				keys = append(keys, TaintNodeDiskPressure)
			}
		case api.NodePIDPressure:
			if c.Status == api.ConditionTrue {
				keys = append(keys, TaintNodePIDPressure)
			}
		}
	}
	if !ready {
		keys = append([]string{api.TaintNodeNotReady}, keys...)
	}
	return keys
}

// addSums adds what a pod takes of the node: its requests and ports.
func (n *NodeInfo) addSums(f *podFacts) {
	n.Requested.add(f.Requests)
	n.NonZeroCPU += f.NonZeroCPU
	n.NonZeroMemory += f.NonZeroMemory
	n.ports = append(n.ports, f.Ports...)
	n.setFlag(flagPorts, len(n.ports) > 0)
}

// subSums takes back what addSums added.
func (n *NodeInfo) subSums(f *podFacts) {
	n.Requested.sub(f.Requests)
	n.NonZeroCPU -= f.NonZeroCPU
	n.NonZeroMemory -= f.NonZeroMemory
	for _, hp := range f.Ports {
		for i, used := range n.ports {
			if used == hp {
				n.ports = append(n.ports[:i], n.ports[i+1:]...)
				break
			}
		}
	}
	n.setFlag(flagPorts, len(n.ports) > 0)
}

// addPod adds a pod's requests and ports to the node's.
func (n *NodeInfo) addPod(p *placedPod) {
	n.addSums(&p.podFacts)
	n.pods = append(n.pods, p)
	n.countLabels(p, 1)
	if len(p.antiAffinity) > 0 {
		n.antiPods = append(n.antiPods, p)
		if n.antiTermPods == nil {
			n.antiTermPods = map[string]int32{}
		}
		for i := range p.antiAffinity {
			n.antiTermPods[p.antiAffinity[i].key]++
		}
	}
	if p.interPodTerms.scores() {
		n.scoringPods++
	}
	if p.Terminating {
		n.terminating++
	}
	n.setFlag(flagAntiPods, len(n.antiPods) > 0)
	n.setFlag(flagScoringPods, n.scoringPods > 0)
}

// removePod takes a pod added with addPod off the node, and reports
// whether it was there.
func (n *NodeInfo) removePod(p *placedPod) bool {
	var ok bool
	if n.pods, ok = removePod(n.pods, p); !ok {
		return false
	}
	n.countLabels(p, -1)
	if len(p.antiAffinity) > 0 {
		n.antiPods, _ = removePod(n.antiPods, p)
		for i := range p.antiAffinity {
			k := p.antiAffinity[i].key
			if c := n.antiTermPods[k] - 1; c > 0 {
				n.antiTermPods[k] = c
			} else {
				delete(n.antiTermPods, k)
			}
		}
	}
	n.subSums(&p.podFacts)
	if p.interPodTerms.scores() {
		n.scoringPods--
	}
	if p.Terminating {
		n.terminating--
	}
	n.setFlag(flagAntiPods, len(n.antiPods) > 0)
	n.setFlag(flagScoringPods, n.scoringPods > 0)
	return true
}

func removePod(pods []*placedPod, p *placedPod) ([]*placedPod, bool) {
	for i, q := range pods {
		if q == p {
			last := len(pods) - 1
			pods[i] = pods[last]
			pods[last] = nil
			return pods[:last], true
		}
	}
	return pods, false
}

// podNetworkRuntime says whether a node's runtime (its
// containerRuntimeVersion, as <runtime>://<version>) gives each pod an
// address of its own: containerd and CRI-O do; the exec runtime runs pods
// on the node's.
func podNetworkRuntime(version string) bool {
	return strings.HasPrefix(version, "containerd://") || strings.HasPrefix(version, "cri-o://")
}

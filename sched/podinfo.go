package sched

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// Requests kube-scheduler assumes for a container that requests no cpu or
// memory when it scores (never when it filters): without them, pods with
// empty requests would all pile onto one node.
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// HostPort is a port a pod takes on its node. Under the exec runtime pods
// share the node's network, so every containerPort is one (SPEC §4).
type HostPort struct {
	Protocol api.Protocol
	Port     int32
	// ContainerOnly: the port is a containerPort and no hostPort, which
	// takes the node's port only on a node whose pods share its network
	// (the exec runtime); a node that gives each pod an address of its
	// own (containerd, CRI-O) maps only hostPorts.
	ContainerOnly bool
}

// same says whether two ports are the same port of one network.
func (p HostPort) same(o HostPort) bool { return p.Protocol == o.Protocol && p.Port == o.Port }

// PodInfo is a pod with everything the plugins ask of it computed once,
// when the pod enters the queue: requests as Kubernetes sums them, host
// ports, owner, compiled selectors. It holds only what outlives an
// attempt; what an attempt finds over the nodes is in its CycleState.
type PodInfo struct {
	// Pod is the pod being scheduled.
	Pod *api.Pod
	// Key is "namespace/name".
	Key string
	podFacts
	// BestEffort: no container requests or limits cpu or memory (QoS
	// class BestEffort), which is what memory pressure turns away.
	BestEffort bool

	nodeSelector            nodeSelector
	preferred               []preferredTerm
	tolerations             []api.Toleration
	toleratesMemoryPressure bool
	// affinity are the pod's required affinity terms (of interPodTerms).
	affinity []affinityTerm
	// spreadRules are the pod's own topology spread constraints.
	spreadRules *spreadRules
}

// podFacts are what placing a pod adds to its node, so that taking it off
// subtracts exactly that, and what the pods scheduled after it read of it:
// its namespace and labels for anti-affinity, its owner for spreading.
type podFacts struct {
	Namespace string
	Labels    map[string]string
	UID       types.UID
	// Requests are max(sum of containers, any init container) per
	// resource, and one pod.
	Requests Resources
	// NonZeroCPU and NonZeroMemory are the requests with the scoring
	// defaults filled in for containers that request nothing.
	NonZeroCPU    int64
	NonZeroMemory int64
	Ports         []HostPort
	// Owner identifies the controller (a hash of its UID), 0 for none.
	Owner uint64
	// Terminating: the pod has a deletion timestamp. It still holds its
	// resources but no longer counts for spreading.
	Terminating bool
	// Name, Priority and Start (the pod's start, or its creation before
	// it started) are what preemption reads of a placed pod; preempted:
	// it is being deleted by a preemption (a DisruptionTarget condition).
	Name         string
	Priority     int32
	Start        time.Time
	preempted    bool
	antiAffinity []affinityTerm
	// interPodTerms are the pod's other inter-pod affinity terms, nil for
	// none.
	interPodTerms *interPodTerms
}

// placedPod is a pod the cache counts on a node. It keeps the pod's facts
// alone, not its PodInfo (with its compiled selectors) nor the object: a
// cluster of 100,000 pods keeps one each.
type placedPod struct {
	podFacts
	node *NodeInfo
	// attempt is the scheduling attempt that assumed the pod here, until
	// its binding is confirmed (by the binder or the watch); nil once
	// bound.
	attempt *PodInfo
}

// NewPodInfo computes what the plugins need of pod. pod is not changed;
// beyond the PodInfo's life, the facts of a placed pod keep its labels
// and the namespaces of its terms, which a stored pod never changes.
func NewPodInfo(pod *api.Pod) *PodInfo {
	p := &PodInfo{
		Pod:         pod,
		Key:         pod.Namespace + "/" + pod.Name,
		podFacts:    newPodFacts(pod),
		BestEffort:  isBestEffort(&pod.Spec),
		tolerations: pod.Spec.Tolerations,
	}
	// Kubernetes gives every pod that is not BestEffort a toleration of
	// memory pressure: such pods declared what they need.
	p.toleratesMemoryPressure = !p.BestEffort
	p.nodeSelector = compileNodeSelector(&pod.Spec)
	p.preferred = compilePreferred(pod.Spec.Affinity)
	if p.interPodTerms != nil {
		p.affinity = p.interPodTerms.affinity
	}
	p.spreadRules = compileSpreadRules(pod)
	return p
}

func newPodFacts(pod *api.Pod) podFacts {
	f := podFacts{
		Name:          pod.Name,
		Priority:      podPriority(pod),
		Start:         pod.CreationTimestamp.Time,
		preempted:     preemptedCondition(pod),
		Namespace:     pod.Namespace,
		Labels:        pod.Labels,
		UID:           pod.UID,
		Terminating:   pod.DeletionTimestamp != nil,
		Ports:         podPorts(&pod.Spec),
		antiAffinity:  compileAntiAffinity(pod),
		interPodTerms: compileInterPodTerms(pod),
	}
	if pod.Status.StartTime != nil {
		f.Start = pod.Status.StartTime.Time
	}
	f.Requests, f.NonZeroCPU, f.NonZeroMemory = podRequests(&pod.Spec)
	f.Owner = controllerOf(pod)
	return f
}

func preemptedCondition(pod *api.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == api.PodDisruptionTarget && c.Reason == api.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// controllerOf is the ownerHash of the pod's controller, 0 for none.
func controllerOf(pod *api.Pod) uint64 {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ownerHash(string(ref.UID))
		}
	}
	return 0
}

// readsPlacedPods says whether scheduling the pod reads the placed pods
// one by one (their labels, for its anti-affinity, affinity or spread
// constraints), not only what they take of each node.
func (p *PodInfo) readsPlacedPods() bool {
	return len(p.antiAffinity) > 0 || p.interPodTerms != nil || p.spreadRules != nil
}

// placed is what the cache keeps of the pod once it is placed.
func (p *PodInfo) placed() *placedPod { return &placedPod{podFacts: p.podFacts} }

// podRequests sums requests as Kubernetes does: containers run together,
// init containers one at a time before them, so a pod needs the larger of
// the containers' sum and any single init container.
func podRequests(spec *api.PodSpec) (req Resources, nzCPU, nzMem int64) {
	for i := range spec.Containers {
		c := containerRequests(&spec.Containers[i])
		req.add(c.Resources)
		nzCPU += c.nzCPU
		nzMem += c.nzMem
	}
	for i := range spec.InitContainers {
		c := containerRequests(&spec.InitContainers[i])
		req.MilliCPU = max(req.MilliCPU, c.MilliCPU)
		req.Memory = max(req.Memory, c.Memory)
		req.EphemeralStorage = max(req.EphemeralStorage, c.EphemeralStorage)
		nzCPU = max(nzCPU, c.nzCPU)
		nzMem = max(nzMem, c.nzMem)
	}
	req.Pods = 1
	return req, nzCPU, nzMem
}

type containerRequest struct {
	Resources
	nzCPU, nzMem int64
}

func containerRequests(c *api.Container) containerRequest {
	var r containerRequest
	reqs := c.Resources.Requests
	r.nzCPU, r.nzMem = DefaultMilliCPURequest, DefaultMemoryRequest
	if q, ok := reqs[api.ResourceCPU]; ok {
		r.MilliCPU = q.MilliValue()
		r.nzCPU = r.MilliCPU
	}
	if q, ok := reqs[api.ResourceMemory]; ok {
		r.Memory = q.Value()
		r.nzMem = r.Memory
	}
	if q, ok := reqs[api.ResourceEphemeralStorage]; ok {
		r.EphemeralStorage = q.Value()
	}
	return r
}

// isBestEffort is Kubernetes' QoS rule: no positive cpu or memory request
// or limit in any container.
func isBestEffort(spec *api.PodSpec) bool {
	for _, cs := range [][]api.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for _, list := range []api.ResourceList{cs[i].Resources.Requests, cs[i].Resources.Limits} {
				for _, name := range []api.ResourceName{api.ResourceCPU, api.ResourceMemory} {
					if q, ok := list[name]; ok && q.Sign() > 0 {
						return false
					}
				}
			}
		}
	}
	return true
}

// podPorts lists the host ports a pod's containers take: each
// containerPort, because the exec runtime runs pods in the node's network
// namespace and maps no port (SPEC §4), marked ContainerOnly for nodes
// whose pods have networks of their own, and each hostPort as well,
// which is the port a manifest asks of the node. Init containers are left out,
// as kube-scheduler leaves them out: they have finished before the others
// listen.
func podPorts(spec *api.PodSpec) []HostPort {
	var ports []HostPort
	for i := range spec.Containers {
		for _, cp := range spec.Containers[i].Ports {
			proto := cp.Protocol
			if proto == "" {
				proto = api.ProtocolTCP
			}
			for _, hp := range []HostPort{{Protocol: proto, Port: cp.HostPort}, {Protocol: proto, Port: cp.ContainerPort, ContainerOnly: true}} {
				if hp.Port == 0 {
					continue
				}
				if i := slices.IndexFunc(ports, hp.same); i >= 0 {
					// A port both asked of the node and listened on is
					// the node's on every node.
					ports[i].ContainerOnly = ports[i].ContainerOnly && hp.ContainerOnly
					continue
				}
				ports = append(ports, hp)
			}
		}
	}
	return ports
}

// ownerHash turns an owner UID into the number that keys its column in
// Nodes (FNV-1a); 0 is kept for "no owner".
func ownerHash(uid string) uint64 {
	if uid == "" {
		return 0
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(uid); i++ {
		h = (h ^ uint64(uid[i])) * 1099511628211
	}
	return max(h, 1)
}

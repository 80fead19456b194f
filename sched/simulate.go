package sched

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Simulation is the scheduler's core over the nodes and bound pods of one
// snapshot, with nothing around it: pods are placed one after another as
// the scheduling loop would place them, each seeing the room the ones
// before it took, and nothing is bound or written. A plan asks it where a
// revision's pods would go.
//
// The snapshot's bound pods are counted on their nodes without a record
// each (the cache keeps one per pod, some 300 bytes): only what they take
// of a node (requests, ports), their priorities and their owners' counts,
// which is all that placing a pod without inter-pod terms or spread
// constraints reads. The first pod that reads placed pods one by one, or
// that could preempt one, has them recorded as the cache records them.
// A plan of ordinary pods thus pays for the pods it adds, not for those
// the cluster holds.
type Simulation struct {
	fw    *Framework
	cache *cache
	// base is the snapshot whose plain bound pods (see plainPod) are
	// counted but not recorded; nil once they are recorded. removed are
	// those of them Remove took off since.
	base    *store.Snapshot
	removed map[types.UID]bool
}

// NewSimulation loads the nodes, namespaces and bound pods of snap.
func NewSimulation(snap *store.Snapshot, opts FrameworkOptions) (*Simulation, error) {
	s := &Simulation{fw: NewFramework(opts), cache: newCache(), base: snap, removed: map[types.UID]bool{}}
	err := snap.Each(namespaceKind, store.Filter{}, func(obj api.Object) bool {
		ns := obj.(*api.Namespace)
		labels := ns.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		s.cache.nodes.SetNamespace(ns.Name, labels)
		return true
	})
	if err != nil {
		return nil, err
	}
	err = snap.Each(nodeKind, store.Filter{}, func(obj api.Object) bool {
		s.cache.nodes.Set(obj.(*api.Node))
		return true
	})
	if err != nil {
		return nil, err
	}
	err = snap.Each(podKind, store.Filter{}, func(obj api.Object) bool {
		pod := obj.(*api.Pod)
		if pod.Spec.NodeName == "" || pod.Finished() {
			return true
		}
		if f, n, ok := s.plainPod(pod); ok {
			s.cache.nodes.countPlain(n, &f, 1)
		} else {
			s.cache.applyPod(pod)
		}
		return true
	})
	return s, err
}

// plainPod returns the facts and the node of a bound pod of the base
// snapshot that is counted without a record: one on a listed node, not
// being deleted, without inter-pod terms of its own, which other pods'
// filters and scores would read.
func (s *Simulation) plainPod(pod *api.Pod) (podFacts, *NodeInfo, bool) {
	n := s.cache.nodes.Get(pod.Spec.NodeName)
	if n == nil || n.node == nil || pod.DeletionTimestamp != nil {
		return podFacts{}, nil, false
	}
	f := newPodFacts(pod)
	if len(f.antiAffinity) > 0 || f.interPodTerms != nil {
		return podFacts{}, nil, false
	}
	return f, n, true
}

// countPlain counts (d = 1) or takes back (d = -1) a pod on node n as
// AddPod and RemovePod do, without the record: what it takes of the node,
// its priority, and its owner's count. A plain pod is not terminating and
// has no inter-pod terms; nothing counts its labels yet (countPodLabels
// and the counters of podCounts come with the first pod that reads placed
// pods, which records them first).
func (ns *Nodes) countPlain(n *NodeInfo, f *podFacts, d int32) {
	if d > 0 {
		n.addSums(f)
	} else {
		n.subSums(f)
	}
	ns.countPriority(f.Priority, d)
	if f.Owner != 0 {
		ns.count(f.Owner, n, d)
	}
}

// record gives every plain pod of the base snapshot its record, as the
// cache keeps them: from now on the placed pods are read one by one.
func (s *Simulation) record() error {
	snap := s.base
	if snap == nil {
		return nil
	}
	s.base = nil
	return snap.Each(podKind, store.Filter{}, func(obj api.Object) bool {
		pod := obj.(*api.Pod)
		if pod.Spec.NodeName == "" || pod.Finished() || s.removed[pod.UID] {
			return true
		}
		if f, n, ok := s.plainPod(pod); ok {
			s.cache.nodes.countPlain(n, &f, -1)
			s.cache.applyPod(pod)
		}
		return true
	})
}

// Pending returns the pods of snap the scheduler would place, in the order
// its queue pops them: higher priority first, then older first.
func Pending(snap *store.Snapshot) ([]*api.Pod, error) {
	var out []*api.Pod
	// The node index's empty value holds the pods not bound yet.
	err := snap.Each(podKind, store.Filter{Index: store.IndexNode}, func(obj api.Object) bool {
		if pod := obj.(*api.Pod); ours(pod) {
			out = append(out, pod)
		}
		return true
	})
	slices.SortStableFunc(out, func(a, b *api.Pod) int {
		if c := cmp.Compare(priorityOf(b), priorityOf(a)); c != 0 {
			return c
		}
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, err
}

func priorityOf(p *api.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// Place chooses a node for pod and counts the pod there, as if bound.
// When no node fits, the error is a *FitError with kube-scheduler's
// reasons.
func (s *Simulation) Place(pod *api.Pod) (string, error) {
	info := NewPodInfo(pod)
	if s.base != nil && (info.readsPlacedPods() || s.cache.nodes.anyBelow(info.Priority)) {
		// Its filters, scores or preemption read the placed pods.
		if err := s.record(); err != nil {
			return "", err
		}
	}
	res, err := s.cache.schedule(s.fw, info)
	if err == nil {
		// Nothing binds in a simulation, so nothing confirms: the pod is
		// placed for good, and its attempt (the PodInfo with its compiled
		// selectors, and through it the pod as it was before placing)
		// need not stay alive with it.
		s.cache.pods[pod.UID].attempt = nil
	}
	return res.Node, err
}

// Remove stops counting a pod placed before (by Place or in the
// snapshot): deleted by a rollout.
func (s *Simulation) Remove(pod *api.Pod) {
	if p := s.cache.pods[pod.UID]; p != nil {
		s.cache.unplace(p)
		return
	}
	if s.base == nil || s.removed[pod.UID] {
		return
	}
	// A plain pod of the snapshot is taken off as it was counted, from
	// its version there.
	obj, err := s.base.Get(podKind, pod.Namespace, pod.Name)
	if err != nil || obj.GetUID() != pod.UID {
		return
	}
	old := obj.(*api.Pod)
	if old.Spec.NodeName == "" || old.Finished() {
		return
	}
	if f, n, ok := s.plainPod(old); ok {
		s.cache.nodes.countPlain(n, &f, -1)
		s.removed[pod.UID] = true
	}
}

// Nodes are the simulation's nodes, with what their pods request so far.
func (s *Simulation) Nodes() []*NodeInfo { return s.cache.nodes.List() }

package sched

import (
	"cmp"
	"slices"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Simulation is the scheduler's core over the nodes and bound pods of one
// snapshot, with nothing around it: pods are placed one after another as
// the scheduling loop would place them, each seeing the room the ones
// before it took, and nothing is bound or written. A plan asks it where a
// revision's pods would go.
type Simulation struct {
	fw    *Framework
	cache *cache
}

// NewSimulation loads the nodes, namespaces and bound pods of snap.
func NewSimulation(snap *store.Snapshot, opts FrameworkOptions) (*Simulation, error) {
	s := &Simulation{fw: NewFramework(opts), cache: newCache()}
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
		if pod := obj.(*api.Pod); pod.Spec.NodeName != "" && !pod.Finished() {
			s.cache.applyPod(pod)
		}
		return true
	})
	return s, err
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
	res, err := s.cache.schedule(s.fw, NewPodInfo(pod))
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
	}
}

// Nodes are the simulation's nodes, with what their pods request so far.
func (s *Simulation) Nodes() []*NodeInfo { return s.cache.nodes.List() }

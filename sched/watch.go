package sched

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

// follow registers the scheduler's handlers for nodes and pods, listed
// from one snapshot (nodes first) so that the cache and the queue agree;
// a lost watch lists its kind again. When the store closes, fail ends Run
// with the error.
func (s *Scheduler) follow(fail context.CancelCauseFunc) (remove func(), err error) {
	closed := func(err error) { fail(err) }
	return s.informers.Register(
		informer.Registration{Kind: nodeKind, Handler: informer.Handler{List: s.relistNodes, Event: s.handleNode, Closed: closed}},
		informer.Registration{Kind: podKind, Handler: informer.Handler{List: s.relistPods, Event: s.handlePod, Closed: closed}},
		informer.Registration{Kind: namespaceKind, Handler: informer.Handler{List: s.relistNamespaces, Event: s.handleNamespace, Closed: closed}},
		informer.Registration{Kind: budgetKind, Handler: informer.Handler{List: s.relistBudgets, Event: s.handleBudget, Closed: closed}},
	)
}

// handleBudget keeps the PodDisruptionBudgets, which preemption reads.
func (s *Scheduler) handleBudget(e store.Event) {
	b := e.Object.(*api.PodDisruptionBudget)
	key := b.Namespace + "/" + b.Name
	if e.Type == store.Deleted {
		s.cache.setBudget(key, nil)
		return
	}
	s.cache.setBudget(key, b)
}

func (s *Scheduler) relistBudgets(snap *store.Snapshot) error {
	return snap.Each(budgetKind, store.Filter{}, func(obj api.Object) bool {
		b := obj.(*api.PodDisruptionBudget)
		s.cache.setBudget(b.Namespace+"/"+b.Name, b)
		return true
	})
}

// handleNamespace keeps the namespaces' labels, which the
// namespaceSelectors of pod affinity terms read; a change of labels may
// let a pending pod fit.
func (s *Scheduler) handleNamespace(e store.Event) {
	ns := e.Object.(*api.Namespace)
	if e.Type == store.Deleted {
		s.cache.setNamespace(ns.Name, nil)
		return
	}
	labels := ns.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	s.cache.setNamespace(ns.Name, labels)
	if old, ok := e.Old.(*api.Namespace); !ok || !maps.Equal(old.Labels, ns.Labels) {
		s.queue.moveAll()
	}
}

func (s *Scheduler) relistNamespaces(snap *store.Snapshot) error {
	return snap.Each(namespaceKind, store.Filter{}, func(obj api.Object) bool {
		ns := obj.(*api.Namespace)
		labels := ns.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		s.cache.setNamespace(ns.Name, labels)
		return true
	})
}

// handleNode keeps the cache's nodes, and sends unschedulable pods back
// when a node is added or changes in a way that could let one fit.
func (s *Scheduler) handleNode(e store.Event) {
	node := e.Object.(*api.Node)
	switch e.Type {
	case store.Deleted:
		s.cache.removeNode(node.Name)
	case store.Added:
		s.cache.setNode(node)
		s.queue.moveAll()
	default:
		s.cache.setNode(node)
		if old, ok := e.Old.(*api.Node); !ok || schedulingChanged(old, node) {
			s.queue.moveAll()
		}
	}
}

// handlePod sorts a pod change: a bound pod is counted on its node, a
// pending one of ours is queued, a pod gone or finished frees its room,
// which sends unschedulable pods back.
func (s *Scheduler) handlePod(e store.Event) {
	pod := e.Object.(*api.Pod)
	key := pod.Namespace + "/" + pod.Name
	switch {
	case e.Type == store.Deleted:
		s.queue.delete(key)
		// Also an assumed pod deleted before its binding is written.
		s.cache.removePod(pod.UID)
		if pod.Spec.NodeName != "" && !pod.Finished() {
			s.queue.moveAll()
		}
	case pod.Spec.NodeName != "":
		s.queue.delete(key)
		if !pod.Finished() {
			s.cache.setPod(pod)
			if old, ok := e.Old.(*api.Pod); !ok || old.Spec.NodeName == "" {
				// A pod newly placed may be what a pending pod's
				// affinity or spreading waits for.
				s.queue.movePodWaiters()
			}
			return
		}
		s.cache.removePod(pod.UID)
		if old, ok := e.Old.(*api.Pod); ok && old.Spec.NodeName != "" && !old.Finished() {
			s.queue.moveAll()
		}
	case ours(pod):
		// An older event of a pod already assumed queues it again; the
		// attempt finds it placed and lets it go.
		s.queue.add(pod)
	default:
		s.queue.delete(key)
		if pendingForUs(pod) {
			s.gated(pod)
		}
	}
}

func (s *Scheduler) relistNodes(snap *store.Snapshot) error {
	keep := map[string]bool{}
	err := snap.Each(nodeKind, store.Filter{}, func(obj api.Object) bool {
		node := obj.(*api.Node)
		keep[node.Name] = true
		s.cache.setNode(node)
		return true
	})
	if err != nil {
		return err
	}
	s.cache.retainNodes(keep)
	s.queue.moveAll()
	return nil
}

func (s *Scheduler) relistPods(snap *store.Snapshot) error {
	bound := map[types.UID]bool{}
	pending := map[string]bool{}
	var gated []*api.Pod
	err := snap.Each(podKind, store.Filter{}, func(obj api.Object) bool {
		pod := obj.(*api.Pod)
		switch {
		case pod.Spec.NodeName != "":
			if !pod.Finished() {
				bound[pod.UID] = true
				s.cache.setPod(pod)
			}
		case ours(pod):
			pending[pod.Namespace+"/"+pod.Name] = true
			s.queue.add(pod)
		case pendingForUs(pod):
			gated = append(gated, pod)
		}
		return true
	})
	if err != nil {
		return err
	}
	s.cache.retainPods(bound)
	s.queue.retain(pending)
	s.queue.moveAll()
	for _, pod := range gated {
		s.gated(pod)
	}
	return nil
}

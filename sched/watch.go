package sched

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// relistDelay is how long to wait before listing again after a watch
// failed for a reason other than falling behind, so that a store in
// trouble is not hammered.
const relistDelay = time.Second

// load fills the cache and the queue from one snapshot, so nodes and pods
// agree, and returns its revision for the watches to start from.
func (s *Scheduler) load() (uint64, error) {
	snap := s.store.Snapshot()
	if err := s.relistNodes(snap); err != nil {
		return 0, err
	}
	if err := s.relistPods(snap); err != nil {
		return 0, err
	}
	return snap.Revision(), nil
}

// follow feeds one kind's changes to handle from rev on. When the watch is
// lost (compacted, or too slow) it lists again and carries on from there;
// when the store closes it ends Run with the error.
func (s *Scheduler) follow(ctx context.Context, fail context.CancelCauseFunc, k *api.Kind, rev uint64,
	handle func(store.Event), relist func(*store.Snapshot) error) {
	for {
		err := s.watch(ctx, k, rev, handle)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, store.ErrClosed) {
			fail(fmt.Errorf("watch %s: %w", k.Resource, err))
			return
		}
		if !errors.Is(err, store.ErrGone) && !errors.Is(err, store.ErrWatcherTooSlow) {
			s.log.Error("watch failed, listing again", "kind", k.Resource, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-s.opts.Clock.After(relistDelay):
			}
		}
		snap := s.store.Snapshot()
		if err := relist(snap); err != nil {
			s.log.Error("list failed", "kind", k.Resource, "err", err)
			continue
		}
		rev = snap.Revision()
	}
}

func (s *Scheduler) watch(ctx context.Context, k *api.Kind, rev uint64, handle func(store.Event)) error {
	w, err := s.store.Watch(ctx, store.WatchOptions{Kind: k, Revision: rev})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		e, err := w.Next(ctx)
		if err != nil {
			return err
		}
		handle(e)
	}
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
		}
		return true
	})
	if err != nil {
		return err
	}
	s.cache.retainPods(bound)
	s.queue.retain(pending)
	s.queue.moveAll()
	return nil
}

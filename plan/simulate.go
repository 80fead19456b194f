package plan

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/daemonset"
	"github.com/berth-dev/berth/reconcile/job"
	"github.com/berth-dev/berth/reconcile/statefulset"
	"github.com/berth-dev/berth/reconcile/workload"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/store"
)

var (
	podKind         = api.KindOf(&api.Pod{})
	deploymentKind  = api.KindOf(&api.Deployment{})
	replicaSetKind  = api.KindOf(&api.ReplicaSet{})
	statefulSetKind = api.KindOf(&api.StatefulSet{})
	daemonSetKind   = api.KindOf(&api.DaemonSet{})
	jobKind         = api.KindOf(&api.Job{})
)

// step is how far the simulation's clock moves each round: past any
// minReadySeconds a rollout waits for, well short of a progress deadline.
const step = time.Minute

// simulation is the outcome of running the controllers and the scheduler
// on the fork until nothing moves.
type simulation struct {
	sched      *sched.Simulation
	counts     PodCounts
	incomplete bool
	// pending are the pods left unplaced, with why, by UID.
	pending map[types.UID]pendingPod
	// owners maps a pod's controller to the workload named in the report.
	workloadOf map[string]string
}

type pendingPod struct {
	pod    *api.Pod
	reason string
}

// reconciler is the one method of every controller's reconciler the
// simulation calls.
type reconciler interface {
	Reconcile(ctx context.Context, key string) (reconcile.Result, error)
}

// simulate runs rounds on the fork: each reconciles every workload changed
// since the fork (Deployments, then ReplicaSets, StatefulSets, DaemonSets
// and Jobs; changed: written after before, the fork as it was forked),
// deletes at once the pods they are deleting, places the pending pods
// with the scheduler's core and binds them, running and ready, so that a
// rollout moves on to its next step. It stops when a round writes no pod,
// or when ctx ends.
func simulate(ctx context.Context, before *store.Snapshot, fork *store.Store, clk *clocktesting.FakeClock, opts sched.FrameworkOptions) (*simulation, error) {
	base := before.Revision()
	s, err := sched.NewSimulation(fork.Snapshot(), opts)
	if err != nil {
		return nil, fmt.Errorf("plan: load the scheduler: %w", err)
	}
	sim := &simulation{sched: s, pending: map[types.UID]pendingPod{}}
	// The Deployment reconciler waits for no watch event, and keeps the
	// hashes of its Deployments' templates from round to round.
	deployments := workload.NewDeploymentReconciler(fork, clk)
	kinds := []struct {
		kind *api.Kind
		make func() reconciler
	}{
		{deploymentKind, func() reconciler { return deployments }},
		{replicaSetKind, func() reconciler { return workload.NewReplicaSetReconciler(fork, clk) }},
		{statefulSetKind, func() reconciler { return statefulset.NewReconciler(fork, clk, nil) }},
		{daemonSetKind, func() reconciler { return daemonset.NewReconciler(fork, clk, nil) }},
		{jobKind, func() reconciler { return job.NewReconciler(fork, clk) }},
	}
	still := 0
	for still < 2 {
		if ctx.Err() != nil {
			sim.incomplete = true
			break
		}
		podRev := fork.KindRevision(podKind)
		for _, k := range kinds {
			// Reconcilers are made afresh each round: their expectations
			// wait for watch events a fork never sends.
			r := k.make()
			err := fork.Snapshot().Each(k.kind, store.Filter{Predicate: changedSince(base)}, func(obj api.Object) bool {
				if ctx.Err() != nil {
					return false
				}
				// A controller's error (a refused pod) shows as pods missing.
				_, _ = r.Reconcile(ctx, reconcile.Key(obj.GetNamespace(), obj.GetName()))
				return true
			})
			if err != nil {
				return nil, err
			}
		}
		if err := sim.reap(ctx, fork, base); err != nil {
			return nil, err
		}
		if err := sim.place(ctx, fork, clk); err != nil {
			return nil, err
		}
		clk.Step(step)
		if fork.KindRevision(podKind) == podRev {
			still++
		} else {
			still = 0
		}
	}
	if err := sim.count(before, fork); err != nil {
		return nil, err
	}
	return sim, nil
}

// changedSince selects the objects written after revision base.
func changedSince(base uint64) func(api.Object) bool {
	return func(obj api.Object) bool {
		rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
		return err == nil && rv > base
	}
}

// reap deletes at once the pods being deleted, as their nodes would once
// they stopped, and takes them off the scheduler's nodes.
func (sim *simulation) reap(ctx context.Context, fork *store.Store, base uint64) error {
	var dying []*api.Pod
	changed := changedSince(base)
	err := fork.Snapshot().Each(podKind, store.Filter{Predicate: func(obj api.Object) bool {
		return obj.GetDeletionTimestamp() != nil && changed(obj)
	}}, func(obj api.Object) bool {
		dying = append(dying, obj.(*api.Pod))
		return true
	})
	if err != nil || len(dying) == 0 {
		return err
	}
	zero := int64(0)
	_, err = fork.Txn(ctx, func(tx *store.Txn) error {
		for _, p := range dying {
			if len(p.Finalizers) > 0 {
				kept := p.DeepCopyObject().(*api.Pod)
				kept.Finalizers = nil
				if _, err := tx.Update(kept); err != nil && !store.IsNotFound(err) {
					return err
				}
			}
			if _, err := tx.Delete(podKind, p.Namespace, p.Name, store.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !store.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
	for _, p := range dying {
		sim.sched.Remove(p)
		delete(sim.pending, p.UID)
	}
	return err
}

// place runs the scheduler's core over the pending pods and binds those
// it places, running and ready since long enough for any minReadySeconds.
func (sim *simulation) place(ctx context.Context, fork *store.Store, clk *clocktesting.FakeClock) error {
	pending, err := sched.Pending(fork.Snapshot())
	if err != nil {
		return err
	}
	var bound []*api.Pod
	since := metav1.NewTime(clk.Now().Add(-24 * time.Hour))
	running := runningConditions(&since)
	for _, p := range pending {
		if ctx.Err() != nil {
			break
		}
		node, err := sim.sched.Place(p)
		var fit *sched.FitError
		switch {
		case errors.As(err, &fit):
			sim.pending[p.UID] = pendingPod{pod: p, reason: fit.Error()}
			continue
		case err != nil:
			sim.pending[p.UID] = pendingPod{pod: p, reason: err.Error()}
			continue
		}
		delete(sim.pending, p.UID)
		bound = append(bound, boundTo(p, node, &since, running))
	}
	if len(bound) == 0 {
		return nil
	}
	sim.counts.Placed += len(bound)
	_, err = fork.Txn(ctx, func(tx *store.Txn) error {
		for _, b := range bound {
			if _, err := tx.Update(b); err != nil && !store.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
	return err
}

// boundTo is p bound to node and running, as the scheduler and the node's
// agent would make it once its containers run and pass their probes:
// started at since, with the conditions of running (runningConditions)
// after its own others. It is a shallow copy: the stored pod's labels,
// owners and containers are shared, not copied (stored objects are never
// changed in place), and so are since and running, so that thousands of
// planned pods cost a struct each, not their spec and status.
func boundTo(p *api.Pod, node string, since *metav1.Time, running []api.PodCondition) *api.Pod {
	b := &api.Pod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta, Spec: p.Spec, Status: p.Status}
	b.Spec.NodeName = node
	b.Status.Phase = api.PodRunning
	b.Status.StartTime = since
	var conds []api.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type != api.PodScheduled && c.Type != api.PodReady && c.Type != api.ContainersReady {
			conds = append(conds, c)
		}
	}
	if conds == nil {
		b.Status.Conditions = running
	} else {
		b.Status.Conditions = append(conds, running...)
	}
	return b
}

// runningConditions are the conditions of a pod scheduled, ready and
// running since since.
func runningConditions(since *metav1.Time) []api.PodCondition {
	conds := make([]api.PodCondition, 0, 3)
	for _, t := range []api.PodConditionType{api.PodScheduled, api.ContainersReady, api.PodReady} {
		conds = append(conds, api.PodCondition{Type: t, Status: api.ConditionTrue, LastTransitionTime: *since})
	}
	return conds
}

// count sums the pods the change makes and removes, comparing the fork
// with itself as it was forked (before): a pod not written since is one
// it had; one written since is kept when before has it under its name and
// UID, and created when not.
func (sim *simulation) count(before *store.Snapshot, fork *store.Store) error {
	forkSnap := fork.Snapshot()
	was := 0
	if err := before.Each(podKind, store.Filter{}, func(api.Object) bool {
		was++
		return true
	}); err != nil {
		return err
	}
	kept := 0
	changed := changedSince(before.Revision())
	err := forkSnap.Each(podKind, store.Filter{}, func(obj api.Object) bool {
		if !changed(obj) {
			kept++
		} else if old, err := before.Get(podKind, obj.GetNamespace(), obj.GetName()); err == nil && old.GetUID() == obj.GetUID() {
			kept++
		} else {
			sim.counts.Created++
		}
		return true
	})
	sim.counts.Deleted = was - kept
	sim.counts.Unplaced = len(sim.pending)
	sim.workloadOf = map[string]string{}
	for _, p := range sim.pending {
		sim.workload(forkSnap, p.pod)
	}
	return err
}

// workload names the workload a pod belongs to: its controller, and that
// controller's own controller (a Deployment above a ReplicaSet, a
// CronJob above a Job); the pod itself when it has none.
func (sim *simulation) workload(snap *store.Snapshot, p *api.Pod) string {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return "Pod/" + p.Namespace + "/" + p.Name
	}
	key := ref.Kind + "/" + p.Namespace + "/" + ref.Name
	if w, ok := sim.workloadOf[key]; ok {
		return w
	}
	w := key
	if k, ok := api.KindFor(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)); ok {
		if owner, err := snap.Get(k, p.Namespace, ref.Name); err == nil {
			if up := metav1.GetControllerOf(owner); up != nil {
				w = up.Kind + "/" + p.Namespace + "/" + up.Name
			}
		}
	}
	sim.workloadOf[key] = w
	return w
}

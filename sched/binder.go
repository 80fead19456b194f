package sched

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var podKind, _ = api.LookupResource("pods")

// Why a write was not made; the pod needs no retry.
var (
	errPodGone        = errors.New("pod was deleted or replaced")
	errBoundElsewhere = errors.New("pod is bound to another node")
)

// write is one change the scheduler makes to a pod: a binding (node set),
// or the PodScheduled=False condition of an unschedulable pod.
type write struct {
	qp   *queuedPod
	info *PodInfo
	pod  *api.Pod // as scheduled: names the pod and its UID
	node string   // the node to bind to; "" for a condition only
	// message is the FitError's, for an unschedulable pod; reason is the
	// condition's reason when it is not Unschedulable (SchedulingGated).
	message string
	reason  string
	// nominate, if set, is the status.nominatedNodeName to write with the
	// condition ("" clears it).
	nominate *string

	obj *api.Pod // what goes to the store
	err error
}

// binder writes bindings and conditions to the store. Under load it
// collects whatever is ready, up to batch writes, into one transaction,
// so the store's per-transaction cost is paid once per batch rather than
// once per pod.
type binder struct {
	store  *store.Store
	clock  clock.PassiveClock
	in     chan *write
	batch  int
	report func(*write)
}

// submit hands a write to the binder, waiting while it is full.
func (b *binder) submit(ctx context.Context, w *write) bool {
	select {
	case b.in <- w:
		return true
	case <-ctx.Done():
		return false
	}
}

// run writes batches until ctx ends; writes still queued then are
// dropped, and the pods stay pending in the store for the next run.
func (b *binder) run(ctx context.Context) {
	batch := make([]*write, 0, b.batch)
	for {
		select {
		case w := <-b.in:
			batch = append(batch[:0], w)
		case <-ctx.Done():
			return
		}
	collect:
		for len(batch) < b.batch {
			select {
			case w := <-b.in:
				batch = append(batch, w)
			default:
				break collect
			}
		}
		b.write(ctx, batch)
		for _, w := range batch {
			b.report(w)
		}
		clear(batch)
	}
}

// write prepares each change from a snapshot, outside the store's write
// lock, then applies them all in one transaction. A pod that changed since
// the snapshot is read again inside the transaction and prepared anew.
func (b *binder) write(ctx context.Context, batch []*write) {
	now := metav1.NewTime(b.clock.Now())
	snap := b.store.Snapshot()
	for _, w := range batch {
		w.obj, w.err = prepare(w, snap.Get, now)
	}
	_, err := b.store.Txn(ctx, func(tx *store.Txn) error {
		for _, w := range batch {
			if w.obj == nil {
				continue
			}
			_, err := tx.Update(w.obj)
			if store.IsConflict(err) {
				if w.obj, w.err = prepare(w, tx.Get, now); w.obj == nil {
					continue
				}
				_, err = tx.Update(w.obj)
			}
			if err != nil {
				w.obj, w.err = nil, err
			}
		}
		return nil
	})
	if err != nil {
		for _, w := range batch {
			if w.obj != nil {
				w.obj, w.err = nil, fmt.Errorf("write pod %s: %w", w.qp.key, err)
			}
		}
	}
}

type getter func(k *api.Kind, namespace, name string) (api.Object, error)

// prepare reads the pod and returns the object to write, nil if there is
// nothing to write (with an error saying why, for a binding).
func prepare(w *write, get getter, now metav1.Time) (*api.Pod, error) {
	obj, err := get(podKind, w.pod.Namespace, w.pod.Name)
	if store.IsNotFound(err) {
		return nil, errPodGone
	}
	if err != nil {
		return nil, err
	}
	cur := obj.(*api.Pod)
	if cur.UID != w.pod.UID {
		return nil, errPodGone
	}
	if w.node == "" {
		// A condition for an unschedulable or gated pod: only while it is
		// pending and still so, and only if it says something new.
		reason := w.reason
		if reason == "" {
			reason = api.PodReasonUnschedulable
		}
		gated := len(cur.Spec.SchedulingGates) > 0
		sameNomination := w.nominate == nil || cur.Status.NominatedNodeName == *w.nominate
		if cur.Spec.NodeName != "" || cur.DeletionTimestamp != nil || gated != (reason == api.PodReasonSchedulingGated) ||
			saysUnschedulable(cur, reason, w.message) && sameNomination {
			return nil, nil
		}
		out := copyForWrite(cur)
		out.Status.Conditions = withCondition(cur.Status.Conditions, api.PodCondition{
			Type: api.PodScheduled, Status: api.ConditionFalse,
			Reason: reason, Message: w.message,
		}, now)
		if w.nominate != nil {
			out.Status.NominatedNodeName = *w.nominate
		}
		return out, nil
	}
	switch {
	case cur.DeletionTimestamp != nil:
		return nil, errPodGone
	case cur.Spec.NodeName == w.node:
		return nil, nil
	case cur.Spec.NodeName != "":
		return nil, errBoundElsewhere
	}
	out := copyForWrite(cur)
	out.Spec.NodeName = w.node
	out.Status.NominatedNodeName = ""
	out.Status.Conditions = withCondition(cur.Status.Conditions, api.PodCondition{
		Type: api.PodScheduled, Status: api.ConditionTrue,
	}, now)
	return out, nil
}

// copyForWrite copies the pod for the fields the scheduler replaces. The
// copy is shallow: it shares labels, containers and the rest with the
// stored object, which is safe because stored objects are never changed
// (every writer copies first) and the scheduler replaces, never changes,
// what it writes: spec.nodeName and a new conditions slice. A deep copy of
// every pod bound was a large part of a binding's cost.
func copyForWrite(pod *api.Pod) *api.Pod {
	out := *pod
	return &out
}

// withCondition returns a new slice with cond set, keeping its transition
// time when the status is unchanged, as Kubernetes does.
func withCondition(conds []api.PodCondition, cond api.PodCondition, now metav1.Time) []api.PodCondition {
	out := make([]api.PodCondition, len(conds), len(conds)+1)
	copy(out, conds)
	cond.LastTransitionTime = now
	for i := range out {
		if out[i].Type == cond.Type {
			if out[i].Status == cond.Status {
				cond.LastTransitionTime = out[i].LastTransitionTime
			}
			out[i] = cond
			return out
		}
	}
	return append(out, cond)
}

// saysUnschedulable reports whether the pod's PodScheduled condition
// already says it is not scheduled for this reason and message, so that
// retrying an unschedulable pod writes nothing until the message changes.
func saysUnschedulable(pod *api.Pod, reason, message string) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == api.PodScheduled {
			return c.Status == api.ConditionFalse && c.Reason == reason && c.Message == message
		}
	}
	return false
}

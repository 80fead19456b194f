package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// BurstReplicas caps the pods one sync creates or deletes (SPEC §7), so
// that one huge change is spread over several syncs and shows progress.
const BurstReplicas = 500

// maxGenerateNamePrefix keeps a generated pod name within 63 characters
// once the store adds its five random characters, as Kubernetes'
// SimpleNameGenerator does.
const maxGenerateNamePrefix = 58

// ReplicaReconciler keeps the pods of one ReplicaSet or
// ReplicationController, named by its key: it adopts matching orphans,
// releases pods that stop matching, creates or deletes pods toward
// spec.replicas and reports what it sees in the status.
type ReplicaReconciler struct {
	store        *store.Store
	kind         *replicatedKind
	clock        clock.PassiveClock
	expectations *reconcile.Expectations
	events       reconcile.EventRecorder
}

// NewReplicaSetReconciler returns the Reconciler of ReplicaSets alone, for
// tests and for callers that run it under their own Controller. A nil
// clock is the real one.
func NewReplicaSetReconciler(s *store.Store, c clock.PassiveClock) *ReplicaReconciler {
	return newReplicaReconciler(s, replicaSets, c)
}

// NewReplicationControllerReconciler is NewReplicaSetReconciler for
// ReplicationControllers.
func NewReplicationControllerReconciler(s *store.Store, c clock.PassiveClock) *ReplicaReconciler {
	return newReplicaReconciler(s, replicationControllers, c)
}

func newReplicaReconciler(s *store.Store, k *replicatedKind, c clock.PassiveClock) *ReplicaReconciler {
	if c == nil {
		c = clock.RealClock{}
	}
	return &ReplicaReconciler{store: s, kind: k, clock: c, expectations: reconcile.NewExpectations(c), events: reconcile.NoEvents{}}
}

// Expectations are the reconciler's outstanding creations and deletions;
// the pod watch settles them.
func (r *ReplicaReconciler) Expectations() *reconcile.Expectations { return r.expectations }

// Reconcile converges the controller named key.
func (r *ReplicaReconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	namespace, name := reconcile.SplitKey(key)
	obj, err := r.store.Get(r.kind.kind, namespace, name)
	if store.IsNotFound(err) {
		r.expectations.Forget(key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get %s %s: %w", r.kind.kind.Resource, key, err)
	}
	v, err := r.kind.view(obj)
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	// Read the expectations before the pods: a pod the watch shows after
	// this point is in the list below.
	needsSync := r.expectations.Satisfied(key)
	pods, claimErr := r.claimPods(ctx, v)
	active := make([]*api.Pod, 0, len(pods))
	var terminating int32
	for _, p := range pods {
		switch {
		case isActive(p):
			active = append(active, p)
		case isTerminating(p):
			terminating++
		}
	}
	var (
		manageErr error
		failure   *replicaFailure
	)
	if needsSync && obj.GetDeletionTimestamp() == nil && claimErr == nil {
		failure, manageErr = r.manageReplicas(ctx, key, v, active)
	}
	now := r.clock.Now()
	st, wait := computeStatus(v, active, now)
	st.ObservedGeneration = obj.GetGeneration()
	if r.kind.countsTerminating {
		st.TerminatingReplicas = terminating
	}
	conds := failureCondition(v.conditions, failure, now)
	var statusErr error
	if st != v.status || !equality.Semantic.DeepEqual(conds, v.conditions) {
		if _, err := r.store.Update(ctx, r.kind.withStatus(obj, st, conds)); err != nil {
			statusErr = fmt.Errorf("update status of %s %s: %w", r.kind.kind.Resource, key, err)
		}
	}
	if err := errors.Join(claimErr, manageErr, statusErr); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// computeStatus counts the active pods: all of them, those carrying every
// template label, the ready and the available ones. wait, if positive, is
// when the next ready pod becomes available.
func computeStatus(v *replicated, active []*api.Pod, now time.Time) (st replicaStatus, wait time.Duration) {
	templateLabels := labels.SelectorFromSet(v.template.Labels)
	minReady := time.Duration(v.minReadySeconds) * time.Second
	for _, p := range active {
		st.Replicas++
		if templateLabels.Matches(labels.Set(p.Labels)) {
			st.FullyLabeledReplicas++
		}
		if !p.Ready() {
			continue
		}
		st.ReadyReplicas++
		ok, left := availableAfter(p, minReady, now)
		switch {
		case ok:
			st.AvailableReplicas++
		case left > 0 && (wait == 0 || left < wait):
			wait = left
		}
	}
	return st, wait
}

// replicaFailure is why a sync could not create or delete pods: the
// reason and message of the ReplicaFailure condition.
type replicaFailure struct{ reason, message string }

// manageReplicas creates or deletes pods toward spec.replicas, at most
// BurstReplicas at a time, recording what it does as expectations. A
// failure says what the ReplicaFailure condition is to say; the error,
// which it comes with, sends the key to back-off.
func (r *ReplicaReconciler) manageReplicas(ctx context.Context, key string, v *replicated, active []*api.Pod) (*replicaFailure, error) {
	diff := len(active) - int(v.replicas)
	switch {
	case diff < 0:
		if namespaceTerminating(r.store, v.obj.GetNamespace()) {
			// The API refuses new pods there; the namespace controller is
			// deleting this controller too.
			return nil, nil
		}
		n := min(-diff, BurstReplicas)
		r.expectations.ExpectCreations(key, n)
		// One copy of the template for all the batches of this sync.
		next := podMaker(v, r.kind.kind)
		created, err := slowStartBatch(n, 1, func(batch int) (int, error) {
			return r.createPods(ctx, v, next, batch)
		})
		for range n - created {
			r.expectations.CreationObserved(key)
		}
		if store.IsNamespaceTerminating(err) {
			// The namespace's deletion began after the check above: the
			// store refused the pods, and this controller goes too.
			return nil, nil
		}
		if err != nil {
			msg := creationRefusal(err, podPrefix(v))
			r.events.Event(v.obj, api.EventTypeWarning, ReasonFailedCreate, "Error creating: "+msg)
			return &replicaFailure{ReasonFailedCreate, msg},
				fmt.Errorf("create pods for %s %s: created %d of %d: %w", r.kind.kind.Resource, key, created, n, err)
		}
	case diff > 0:
		n := min(diff, BurstReplicas)
		victims := RankForDeletion(active)[:n]
		podKeys := make([]string, n)
		for i, p := range victims {
			podKeys[i] = reconcile.ObjectKey(p)
		}
		r.expectations.ExpectDeletions(key, podKeys)
		var (
			mu   sync.Mutex
			errs []error
			wg   sync.WaitGroup
		)
		for i, p := range victims {
			wg.Go(func() {
				_, err := r.store.Delete(ctx, podKind, p.Namespace, p.Name,
					store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(p.UID)}})
				if err == nil {
					r.events.Event(v.obj, api.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: "+p.Name)
					return
				}
				// The watch will never show it: do not wait for it.
				r.expectations.DeletionObserved(key, podKeys[i])
				if store.IsNotFound(err) {
					return
				}
				r.events.Event(v.obj, api.EventTypeWarning, ReasonFailedDelete, "Error deleting: "+err.Error())
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return &replicaFailure{ReasonFailedDelete, err.Error()},
				fmt.Errorf("delete pods of %s %s: %w", r.kind.kind.Resource, key, err)
		}
	}
	return nil, nil
}

// creationRefusal is the text of the store's refusal to create a pod (a
// quota, a validation), naming the pod by its generateName prefix, as
// Kubernetes' admission names an object before its name is generated:
// each retry draws a new name, and the refusal must read the same every
// time for the event recorder to fold the repeats into one Event and for
// the condition to say one thing.
func creationRefusal(err error, prefix string) string {
	var oe *store.ObjectError
	if !errors.As(err, &oe) || oe.Kind == nil || oe.Kind.GroupResource() != podKind.GroupResource() || !strings.HasPrefix(oe.Name, prefix) {
		return err.Error()
	}
	named := *oe
	named.Name = prefix
	return named.Error()
}

// Reasons of the ReplicaFailure condition, as Kubernetes names them.
const (
	ReasonFailedCreate = "FailedCreate"
	ReasonFailedDelete = "FailedDelete"
)

// Reasons of the controllers' Normal events, as Kubernetes names them.
const (
	ReasonSuccessfulCreate  = "SuccessfulCreate"
	ReasonSuccessfulDelete  = "SuccessfulDelete"
	ReasonScalingReplicaSet = "ScalingReplicaSet"
)

// failureCondition sets the ReplicaFailure condition when a sync failed to
// create or delete pods (a quota, a missing namespace) and removes it after
// a sync that did not fail, as Kubernetes' calculateStatus: a failure
// while the condition stands keeps the condition as it is.
func failureCondition(cur []api.WorkloadCondition, f *replicaFailure, now time.Time) []api.WorkloadCondition {
	var existing *api.WorkloadCondition
	for i := range cur {
		if cur[i].Type == api.ReplicaFailure {
			existing = &cur[i]
		}
	}
	switch {
	case f != nil && existing == nil:
		t := metav1.NewTime(now)
		return append(slices.Clone(cur), api.WorkloadCondition{
			Type: api.ReplicaFailure, Status: api.ConditionTrue, Reason: f.reason, Message: f.message,
			LastUpdateTime: t, LastTransitionTime: t,
		})
	case f == nil && existing != nil:
		out := slices.DeleteFunc(slices.Clone(cur), func(c api.WorkloadCondition) bool { return c.Type == api.ReplicaFailure })
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return cur
}

// namespaceTerminating reports whether the namespace is being deleted,
// where the store refuses new objects (namespace.Admit).
func namespaceTerminating(st *store.Store, name string) bool {
	obj, err := st.Get(namespaceKind, "", name)
	if err != nil {
		return false
	}
	return obj.(*api.Namespace).Terminating()
}

// slowStartBatch creates count things through fn, in batches of initial,
// then twice as many, and so on, stopping after the first batch with a
// failure, so that a controller that cannot create pods (a quota, a
// missing namespace) learns it from one call rather than from a flood. fn
// creates a batch of n and returns how many it created. slowStartBatch
// returns how many were created in all and the error of the failed batch.
func slowStartBatch(count, initial int, fn func(n int) (int, error)) (int, error) {
	remaining := count
	successes := 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		ok, err := fn(batch)
		successes += ok
		if err != nil {
			return successes, err
		}
		remaining -= batch
	}
	return successes, nil
}

// createPods creates n pods made by next (a podMaker of v) in one store
// transaction: a slow-start batch of 256 pods is one commit rather than
// 256. When that transaction fails, nothing of it was written, and the
// pods are created again one at a time, stopping at the first failure, so
// that a batch that crosses a quota creates the pods that fit and the
// error names the one that does not. It returns how many pods it created.
func (r *ReplicaReconciler) createPods(ctx context.Context, v *replicated, next func() *api.Pod, n int) (int, error) {
	if n > 1 {
		names := make([]string, 0, n)
		_, err := r.store.Txn(ctx, func(tx *store.Txn) error {
			names = names[:0]
			for range n {
				p, err := tx.Create(next())
				if err != nil {
					return err
				}
				names = append(names, p.GetName())
			}
			return nil
		})
		if err == nil {
			for _, name := range names {
				r.events.Event(v.obj, api.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: "+name)
			}
			return n, nil
		}
		if ctx.Err() != nil {
			// The transaction may have committed; the watch will tell.
			return 0, err
		}
	}
	for i := range n {
		p, err := r.store.Create(ctx, next())
		if err != nil {
			return i, err
		}
		r.events.Event(v.obj, api.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: "+p.GetName())
	}
	return n, nil
}

// podMaker returns a maker of pods of v's template, for the batches of a
// sync: the template is copied and defaulted once, and every pod made
// shares that copy's spec, labels and annotations, with metadata of its
// own. Sharing is safe because stored objects are never changed (every
// writer copies first, admission too), and it makes a pod cost a few
// hundred bytes rather than a copy of the whole template, in the store's
// memory too.
func podMaker(v *replicated, k *api.Kind) func() *api.Pod {
	proto := newPod(v, k)
	return func() *api.Pod {
		p := &api.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace:       proto.Namespace,
			GenerateName:    proto.GenerateName,
			Labels:          proto.Labels,
			Annotations:     proto.Annotations,
			Finalizers:      proto.Finalizers,
			OwnerReferences: []metav1.OwnerReference{proto.OwnerReferences[0]},
		}, Spec: proto.Spec, Status: proto.Status}
		return p
	}
}

// podPrefix is the generateName of v's pods: its name and a dash, cut to
// leave room for the random suffix.
func podPrefix(v *replicated) string {
	prefix := v.obj.GetName() + "-"
	if len(prefix) > maxGenerateNamePrefix {
		prefix = prefix[:maxGenerateNamePrefix]
	}
	return prefix
}

// newPod is a pod of v's template: named <owner>-<5 random characters>,
// labelled and annotated as the template, controlled by v.
func newPod(v *replicated, k *api.Kind) *api.Pod {
	t := v.template.DeepCopy()
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       v.obj.GetNamespace(),
			GenerateName:    podPrefix(v),
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(v.obj, k.GVK)},
		},
		Spec: t.Spec,
	}
	api.Default(pod)
	return pod
}

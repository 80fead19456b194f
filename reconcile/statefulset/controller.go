package statefulset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/reconcile/history"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "statefulset"

// EventComponent is the source of the controller's events, as
// kube-controller-manager names it.
const EventComponent = "statefulset-controller"

// Reasons of the controller's events, as Kubernetes names them.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedCreate     = "FailedCreate"
)

var (
	setKind   = api.MustLookupResource("statefulsets")
	podKind   = api.MustLookupResource("pods")
	claimKind = api.MustLookupResource("persistentvolumeclaims")
)

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	// Events receives what the controller does; nil records nothing.
	Events *event.Recorder
}

// Reconciler converges one StatefulSet, named by its key.
type Reconciler struct {
	store  *store.Store
	clock  clock.PassiveClock
	events *event.Recorder
}

// NewReconciler returns the Reconciler alone, for tests that call
// Reconcile directly; a nil clock is the real one.
func NewReconciler(s *store.Store, c clock.PassiveClock, events *event.Recorder) *Reconciler {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Reconciler{store: s, clock: c, events: events}
}

// NewController returns the StatefulSet controller, fed by watches on
// StatefulSets and their pods.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	var c clock.PassiveClock
	if opts.Clock != nil {
		c = opts.Clock
	}
	r := NewReconciler(s, c, opts.Events)
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock: opts.Clock, Backoff: opts.Backoff, Logger: opts.Logger, Store: s,
		Watches: []reconcile.Watch{{Kind: setKind}, {Kind: podKind, Keys: PodKeys}},
	})
}

// PodKeys maps a pod change to the key of the StatefulSet controlling it.
func PodKeys(e store.Event) []string {
	keys := ownerKeys(e.Object)
	if e.Old != nil {
		keys = append(keys, ownerKeys(e.Old)...)
	}
	return slices.Compact(keys)
}

func ownerKeys(o api.Object) []string {
	if ref := api.ControllerOf(o); ref != nil && ref.Kind == setKind.GVK.Kind {
		return []string{reconcile.Key(o.GetNamespace(), ref.Name)}
	}
	return nil
}

// state is what one sync reads: the set, its revisions and its pods by
// ordinal.
type state struct {
	set            *api.StatefulSet
	selector       labels.Selector
	revisions      []*api.ControllerRevision
	current        *api.ControllerRevision
	update         *api.ControllerRevision
	currentTpl     *api.PodTemplateSpec
	updateTpl      *api.PodTemplateSpec
	collisionCount int32
	// pods are the set's pods by ordinal, condemned ones (outside the
	// ordinals of replicas) included.
	pods map[int]*api.Pod
}

func (st *state) start() int {
	if o := st.set.Spec.Ordinals; o != nil {
		return int(o.Start)
	}
	return 0
}

func (st *state) replicas() int {
	if r := st.set.Spec.Replicas; r != nil {
		return int(*r)
	}
	return 1
}

func (st *state) inRange(ord int) bool {
	return ord >= st.start() && ord < st.start()+st.replicas()
}

func (st *state) minReady() time.Duration {
	return time.Duration(st.set.Spec.MinReadySeconds) * time.Second
}

// Reconcile converges the StatefulSet named key.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := reconcile.SplitKey(key)
	obj, err := r.store.Get(setKind, ns, name)
	if store.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	set := obj.(*api.StatefulSet)
	if set.DeletionTimestamp != nil {
		// The garbage collector takes the pods, and the claims the set
		// owns (whenDeleted: Delete).
		return reconcile.Result{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || sel.Empty() {
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("statefulset %s: spec.selector: %v", key, err))
	}
	st := &state{set: set, selector: sel}
	if set.Status.CollisionCount != nil {
		st.collisionCount = *set.Status.CollisionCount
	}
	if err := r.readRevisions(ctx, st); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.readPods(ctx, st); err != nil {
		return reconcile.Result{}, err
	}
	manageErr := r.manage(ctx, st)
	wait, statusErr := r.writeStatus(ctx, st)
	trimErr := r.trim(ctx, st)
	if err := errors.Join(manageErr, statusErr, trimErr); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// readRevisions finds or makes the revision of the set's template (the
// update revision) and the current one, the status's or else the update.
func (r *Reconciler) readRevisions(ctx context.Context, st *state) error {
	set := st.set
	revs, err := history.Owned(r.store, set)
	if err != nil {
		return fmt.Errorf("list revisions of statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	data, err := history.Patch(&set.Spec.Template)
	if err != nil {
		return err
	}
	upd, err := history.Ensure(ctx, r.store, set, setKind.GVK, set.Spec.Template.Labels, data, revs, &st.collisionCount)
	if err != nil {
		return err
	}
	if revs, err = history.Owned(r.store, set); err != nil {
		return err
	}
	st.revisions, st.update = revs, upd
	st.current = upd
	for _, rv := range revs {
		if rv.Name == set.Status.CurrentRevision {
			st.current = rv
		}
	}
	if st.updateTpl, err = st.update.Template(); err != nil {
		return reconcile.Terminal(err)
	}
	if st.currentTpl, err = st.current.Template(); err != nil {
		return reconcile.Terminal(err)
	}
	return nil
}

// readPods lists the set's pods, adopting the orphans its selector
// matches whose names are the set's.
func (r *Reconciler) readPods(ctx context.Context, st *state) error {
	set := st.set
	owned, _, err := r.store.List(podKind, store.Filter{Namespace: set.Namespace, Index: store.IndexOwner, Value: string(set.UID)})
	if err != nil {
		return err
	}
	orphans, _, err := r.store.List(podKind, store.Filter{Namespace: set.Namespace, Index: store.IndexOrphan, Value: set.Namespace, Labels: st.selector})
	if err != nil {
		return err
	}
	st.pods = map[int]*api.Pod{}
	for _, o := range owned {
		p := o.(*api.Pod)
		ref := api.ControllerOf(p)
		if ref == nil || ref.UID != set.UID {
			continue
		}
		if ord, ok := ordinalOf(set.Name, p.Name); ok {
			st.pods[ord] = p
		}
	}
	for _, o := range orphans {
		p := o.(*api.Pod)
		ord, ok := ordinalOf(set.Name, p.Name)
		if !ok || p.DeletionTimestamp != nil || st.pods[ord] != nil {
			continue
		}
		c := p.DeepCopy()
		c.OwnerReferences = append(c.OwnerReferences, *metav1.NewControllerRef(set, setKind.GVK))
		adopted, err := r.store.Update(ctx, c)
		if err != nil {
			if store.IsNotFound(err) || store.IsConflict(err) {
				continue
			}
			return fmt.Errorf("adopt pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		st.pods[ord] = adopted.(*api.Pod)
	}
	return nil
}

// revisionFor is the revision (and template) a new pod of an ordinal is
// made from: the current one below the partition of a rolling update,
// the update revision otherwise, as Kubernetes' newVersionedStatefulSetPod.
func (st *state) revisionFor(ord int) (*api.ControllerRevision, *api.PodTemplateSpec) {
	u := st.set.Spec.UpdateStrategy
	if u.Type == api.RollingUpdateStatefulSetStrategyType && u.RollingUpdate != nil && u.RollingUpdate.Partition != nil &&
		ord-st.start() < int(*u.RollingUpdate.Partition) {
		return st.current, st.currentTpl
	}
	return st.update, st.updateTpl
}

// manage creates, replaces and deletes pods toward the spec: missing
// ordinals are created (in order, each waiting for the one before under
// OrderedReady), failed pods replaced, condemned ones deleted from the
// highest ordinal down, and then outdated pods replaced by the update
// strategy.
func (r *Reconciler) manage(ctx context.Context, st *state) error {
	set := st.set
	ordered := set.Spec.PodManagementPolicy != api.ParallelPodManagement
	first, last := st.start(), st.start()+st.replicas()
	// Replace finished pods; create missing ones.
	for ord := first; ord < last; ord++ {
		p := st.pods[ord]
		if p != nil && finished(p) && p.DeletionTimestamp == nil {
			if err := r.deletePod(ctx, st, ord, p); err != nil {
				return err
			}
			if ordered {
				return nil
			}
			continue
		}
		if p == nil {
			rev, tpl := st.revisionFor(ord)
			if err := r.createPod(ctx, st, ord, newPod(set, tpl, rev.Name, ord)); err != nil {
				return err
			}
			if ordered {
				return nil
			}
			continue
		}
		if ordered && (p.DeletionTimestamp != nil || !runningAndReady(p)) {
			// OrderedReady: the next ordinal waits for this one.
			return nil
		}
		if ordered && st.minReady() > 0 {
			if ok, _ := available(p, st.minReady(), r.clock.Now()); !ok {
				return nil
			}
		}
	}
	// Condemned pods, highest ordinal first.
	var condemned []int
	for ord := range st.pods {
		if !st.inRange(ord) {
			condemned = append(condemned, ord)
		}
	}
	slices.Sort(condemned)
	slices.Reverse(condemned)
	for _, ord := range condemned {
		p := st.pods[ord]
		if p.DeletionTimestamp != nil {
			if ordered {
				return nil
			}
			continue
		}
		if err := r.deletePod(ctx, st, ord, p); err != nil {
			return err
		}
		if ordered {
			return nil
		}
	}
	if err := r.deleteScaledClaims(ctx, st); err != nil {
		return err
	}
	if set.Spec.UpdateStrategy.Type != api.RollingUpdateStatefulSetStrategyType {
		return nil
	}
	return r.rollingUpdate(ctx, st)
}

// rollingUpdate deletes outdated pods from the highest ordinal down to
// the partition, keeping at most maxUnavailable of the set's pods
// unavailable; each is made again from the update revision.
func (r *Reconciler) rollingUpdate(ctx context.Context, st *state) error {
	set := st.set
	partition, maxUnavailable := 0, 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			partition = int(*ru.Partition)
		}
		if ru.MaxUnavailable != nil {
			n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, st.replicas(), true)
			if err == nil {
				maxUnavailable = max(n, 1)
			}
		}
	}
	now := r.clock.Now()
	first, last := st.start(), st.start()+st.replicas()
	unavailable := 0
	for ord := first; ord < last; ord++ {
		p := st.pods[ord]
		if p == nil {
			unavailable++
			continue
		}
		if ok, _ := available(p, st.minReady(), now); !ok {
			unavailable++
		}
	}
	for ord := last - 1; ord >= first+partition; ord-- {
		p := st.pods[ord]
		if p == nil || p.Labels[api.LabelControllerRevisionHash] == st.update.Name {
			continue
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		ok, _ := available(p, st.minReady(), now)
		if ok && unavailable >= maxUnavailable {
			return nil
		}
		if err := r.deletePod(ctx, st, ord, p); err != nil {
			return err
		}
		if ok {
			unavailable++
		}
	}
	return nil
}

// createPod makes the pod's claims that do not exist yet, then the pod.
func (r *Reconciler) createPod(ctx context.Context, st *state, ord int, pod *api.Pod) error {
	set := st.set
	for i := range set.Spec.VolumeClaimTemplates {
		c := newClaim(set, &set.Spec.VolumeClaimTemplates[i], pod.Name)
		_, err := r.store.Get(claimKind, c.Namespace, c.Name)
		if err == nil {
			continue
		}
		if !store.IsNotFound(err) {
			return err
		}
		if _, err := r.store.Create(ctx, c); err != nil && !store.IsAlreadyExists(err) {
			r.events.Event(set, api.EventTypeWarning, ReasonFailedCreate, fmt.Sprintf("create Claim %s for Pod %s in StatefulSet %s failed error: %v", c.Name, pod.Name, set.Name, err))
			return fmt.Errorf("create claim %s/%s: %w", c.Namespace, c.Name, err)
		}
		r.events.Event(set, api.EventTypeNormal, ReasonSuccessfulCreate, fmt.Sprintf("create Claim %s Pod %s in StatefulSet %s success", c.Name, pod.Name, set.Name))
	}
	created, err := r.store.Create(ctx, pod)
	if err != nil {
		if store.IsAlreadyExists(err) {
			// An old pod of the name is still going: the next sync sees it.
			return nil
		}
		r.events.Event(set, api.EventTypeWarning, ReasonFailedCreate, fmt.Sprintf("create Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err))
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	st.pods[ord] = created.(*api.Pod)
	r.events.Event(set, api.EventTypeNormal, ReasonSuccessfulCreate, fmt.Sprintf("create Pod %s in StatefulSet %s successful", pod.Name, set.Name))
	return nil
}

// deletePod deletes a pod and records what is left of it in st.pods: the
// pod being deleted, or nothing.
func (r *Reconciler) deletePod(ctx context.Context, st *state, ord int, p *api.Pod) error {
	set := st.set
	obj, err := r.store.Delete(ctx, podKind, p.Namespace, p.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(p.UID)}})
	if err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if left, ok := obj.(*api.Pod); ok && err == nil && left.DeletionTimestamp != nil {
		st.pods[ord] = left
	} else {
		delete(st.pods, ord)
	}
	r.events.Event(set, api.EventTypeNormal, ReasonSuccessfulDelete, fmt.Sprintf("delete Pod %s in StatefulSet %s successful", p.Name, set.Name))
	return nil
}

// deleteScaledClaims deletes, under whenScaled: Delete, the claims of the
// ordinals a scale down removed once their pods are gone.
func (r *Reconciler) deleteScaledClaims(ctx context.Context, st *state) error {
	set := st.set
	p := set.Spec.PersistentVolumeClaimRetentionPolicy
	if p == nil || p.WhenScaled != api.DeletePersistentVolumeClaimRetentionPolicyType || len(set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	claims, _, err := r.store.List(claimKind, store.Filter{Namespace: set.Namespace, Labels: labels.SelectorFromSet(set.Spec.Selector.MatchLabels)})
	if err != nil {
		return err
	}
	for _, o := range claims {
		c := o.(*api.PersistentVolumeClaim)
		if c.DeletionTimestamp != nil {
			continue
		}
		for _, t := range set.Spec.VolumeClaimTemplates {
			ord, ok := ordinalOf(set.Name, stringsCut(c.Name, t.Name+"-"))
			if !ok || st.inRange(ord) || st.pods[ord] != nil {
				continue
			}
			if _, err := r.store.Delete(ctx, claimKind, c.Namespace, c.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(c.UID)}}); err != nil && !store.IsNotFound(err) {
				return fmt.Errorf("delete claim %s/%s: %w", c.Namespace, c.Name, err)
			}
			r.events.Event(set, api.EventTypeNormal, ReasonSuccessfulDelete, fmt.Sprintf("delete Claim %s in StatefulSet %s successful", c.Name, set.Name))
			break
		}
	}
	return nil
}

// stringsCut is s without prefix, or "" when it does not start with it.
func stringsCut(s, prefix string) string {
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return ""
}

// writeStatus counts the pods into the status; wait, if positive, is when
// a ready pod becomes available.
func (r *Reconciler) writeStatus(ctx context.Context, st *state) (time.Duration, error) {
	set := st.set
	now := r.clock.Now()
	next := api.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    st.current.Name,
		UpdateRevision:     st.update.Name,
		Conditions:         set.Status.Conditions,
	}
	if st.collisionCount != 0 || set.Status.CollisionCount != nil {
		c := st.collisionCount
		next.CollisionCount = &c
	}
	var wait time.Duration
	for _, p := range st.pods {
		if finished(p) {
			continue
		}
		next.Replicas++
		if runningAndReady(p) {
			next.ReadyReplicas++
		}
		ok, left := available(p, st.minReady(), now)
		if ok {
			next.AvailableReplicas++
		} else if left > 0 && (wait == 0 || left < wait) {
			wait = left
		}
		switch p.Labels[api.LabelControllerRevisionHash] {
		case st.current.Name:
			next.CurrentReplicas++
		}
		if p.Labels[api.LabelControllerRevisionHash] == st.update.Name {
			next.UpdatedReplicas++
		}
	}
	// The rollout is complete: the update revision becomes the current
	// one, as Kubernetes' completeRollingUpdate.
	if next.UpdatedReplicas == next.Replicas && next.ReadyReplicas == next.Replicas && int(next.Replicas) == st.replicas() {
		next.CurrentRevision = st.update.Name
		next.CurrentReplicas = next.UpdatedReplicas
	}
	if equality.Semantic.DeepEqual(next, set.Status) {
		return wait, nil
	}
	c := set.DeepCopy()
	c.Status = next
	if _, err := r.store.Update(ctx, c); err != nil {
		return wait, fmt.Errorf("update status of statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	return wait, nil
}

// trim deletes the oldest revisions beyond revisionHistoryLimit, keeping
// those of the status and of live pods.
func (r *Reconciler) trim(ctx context.Context, st *state) error {
	live := map[string]bool{st.current.Name: true, st.update.Name: true}
	for _, p := range st.pods {
		live[p.Labels[api.LabelControllerRevisionHash]] = true
	}
	limit := api.DefaultRevisionHistoryLimit
	if l := st.set.Spec.RevisionHistoryLimit; l != nil {
		limit = *l
	}
	return history.Trim(ctx, r.store, st.revisions, live, limit)
}

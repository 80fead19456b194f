package workload

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// DeploymentName is the Deployment controller's name in logs.
const DeploymentName = "deployment"

// The label and annotation the controller writes, defined in api because
// `berth rollout` reads them too.
const (
	LabelPodTemplateHash = api.LabelPodTemplateHash
	AnnotationRevision   = api.AnnotationDeploymentRevision
)

// PodTemplateHash names the ReplicaSet of a template: FNV-32a over the
// template's deterministic dump (and the collision count, if any),
// rendered with rand.SafeEncodeString, as Kubernetes' ComputeHash.
func PodTemplateHash(t *api.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(t))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// templateHashes remembers each Deployment's PodTemplateHash for the
// generation it was computed at: the hash dumps the whole template, which
// costs more than the rest of a sync that finds nothing to do, and the
// template changes only with a new generation (the store counts the
// spec's changes), the collision count only with a status write.
type templateHashes struct {
	mu sync.Mutex
	m  map[string]templateHash
}

type templateHash struct {
	uid        types.UID
	generation int64
	collisions int32
	hash       string
}

// of returns the hash of the template of d, filed under key.
func (h *templateHashes) of(key string, d *api.Deployment) string {
	want := templateHash{uid: d.UID, generation: d.Generation, collisions: -1}
	if d.Status.CollisionCount != nil {
		want.collisions = *d.Status.CollisionCount
	}
	h.mu.Lock()
	got, ok := h.m[key]
	h.mu.Unlock()
	if want.generation > 0 && ok && got.uid == want.uid && got.generation == want.generation && got.collisions == want.collisions {
		return got.hash
	}
	want.hash = PodTemplateHash(&d.Spec.Template, d.Status.CollisionCount)
	h.mu.Lock()
	if h.m == nil {
		h.m = map[string]templateHash{}
	}
	h.m[key] = want
	h.mu.Unlock()
	return want.hash
}

func (h *templateHashes) forget(key string) {
	h.mu.Lock()
	delete(h.m, key)
	h.mu.Unlock()
}

// DeploymentReconciler rolls one Deployment, named by its key, out through
// its ReplicaSets and reports the rollout in its status.
type DeploymentReconciler struct {
	store  *store.Store
	clock  clock.PassiveClock
	events reconcile.EventRecorder
	hashes templateHashes
}

// NewDeploymentReconciler returns the Reconciler alone, for tests and for
// callers that run it under their own Controller. A nil clock is the real
// one.
func NewDeploymentReconciler(s *store.Store, c clock.PassiveClock) *DeploymentReconciler {
	if c == nil {
		c = clock.RealClock{}
	}
	return &DeploymentReconciler{store: s, clock: c, events: reconcile.NoEvents{}}
}

// NewDeploymentController returns the Deployment controller, fed by watches
// on Deployments and ReplicaSets.
func NewDeploymentController(s *store.Store, opts Options) *reconcile.Controller {
	var c clock.PassiveClock
	if opts.Clock != nil {
		c = opts.Clock
	}
	r := NewDeploymentReconciler(s, c)
	r.events = eventsOr(opts.Events)
	return reconcile.NewController(DeploymentName, r, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: r.Watches(),
	})
}

// Watches feed the controller: a Deployment's own changes, and a
// ReplicaSet's changes to its Deployment (or, for an orphan, to the
// Deployments whose selector matches it).
func (r *DeploymentReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{Kind: deploymentKind},
		{Kind: replicaSetKind, Keys: r.ReplicaSetKeys},
	}
}

// ReplicaSetKeys maps a ReplicaSet change to the Deployments it concerns.
func (r *DeploymentReconciler) ReplicaSetKeys(e store.Event) []string {
	keys := map[string]struct{}{}
	add := func(rs *api.ReplicaSet) {
		if ref := api.ControllerOf(rs); ref != nil {
			if ref.Kind == deploymentKind.GVK.Kind {
				keys[reconcile.Key(rs.Namespace, ref.Name)] = struct{}{}
			}
			return
		}
		_ = r.store.Snapshot().Each(deploymentKind, store.Filter{Namespace: rs.Namespace}, func(obj api.Object) bool {
			d := obj.(*api.Deployment)
			if sel, err := deploymentSelector(d); err == nil && sel.Matches(labels.Set(rs.Labels)) {
				keys[reconcile.ObjectKey(d)] = struct{}{}
			}
			return true
		})
	}
	add(e.Object.(*api.ReplicaSet))
	if e.Old != nil {
		add(e.Old.(*api.ReplicaSet))
	}
	return slices.Sorted(maps.Keys(keys))
}

func deploymentSelector(d *api.Deployment) (labels.Selector, error) {
	if d.Spec.Selector == nil {
		return nil, fmt.Errorf("deployment %s/%s: spec.selector is required", d.Namespace, d.Name)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: spec.selector: %w", d.Namespace, d.Name, err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("deployment %s/%s: spec.selector is empty and would select every ReplicaSet", d.Namespace, d.Name)
	}
	return sel, nil
}

// Reconcile converges the Deployment named key.
func (r *DeploymentReconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	namespace, name := reconcile.SplitKey(key)
	obj, err := r.store.Get(deploymentKind, namespace, name)
	if store.IsNotFound(err) {
		r.hashes.forget(key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get deployment %s: %w", key, err)
	}
	d := obj.(*api.Deployment)
	sel, err := deploymentSelector(d)
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	surge, unavailable, err := rollingBounds(d)
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("deployment %s: spec.strategy.rollingUpdate.%w", key, err))
	}
	rsList, err := r.claimReplicaSets(ctx, d, sel)
	if err != nil {
		return reconcile.Result{}, err
	}
	hash := r.hashes.of(key, d)
	var newRS *api.ReplicaSet
	var old []*api.ReplicaSet
	for _, rs := range rsList {
		if rs.Labels[LabelPodTemplateHash] == hash && newRS == nil {
			newRS = rs
		} else {
			old = append(old, rs)
		}
	}
	progressed := false
	switch {
	case d.DeletionTimestamp != nil:
	case namespaceTerminating(r.store, d.Namespace):
		// The store refuses new ReplicaSets there; the namespace
		// controller is deleting this Deployment too.
	case d.Spec.Paused || d.Spec.Strategy.Type == api.RollingUpdateDeploymentStrategyType && IsScalingEvent(scalingOf(d, newRS, old, surge)):
		// A paused rollout follows a change of replicas, and a change of
		// replicas in a rolling update is spread over the ReplicaSets
		// before the rollout moves on, as Kubernetes' sync. (Recreate's
		// own step scales its one active ReplicaSet.)
		newRS, err = r.scaleProportionally(ctx, d, newRS, old, surge)
		if err != nil {
			return reconcile.Result{}, err
		}
	default:
		newRS, progressed, err = r.rollout(ctx, d, hash, newRS, old, surge, unavailable)
		if store.IsNamespaceTerminating(err) {
			// The namespace's deletion began after the check above.
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	st, wait := r.status(d, newRS, old, unavailable, progressed)
	if st.Complete && d.DeletionTimestamp == nil {
		if err := r.cleanup(ctx, d, old); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.writeStatus(ctx, d, st.DeploymentStatus, newRS); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// rollout takes one step toward the template: it creates the new
// ReplicaSet if need be, then scales by the strategy. progressed reports
// whether it wrote anything.
func (r *DeploymentReconciler) rollout(ctx context.Context, d *api.Deployment, hash string, newRS *api.ReplicaSet, old []*api.ReplicaSet, surge, unavailable int32) (*api.ReplicaSet, bool, error) {
	revision := maxRevision(old) + 1
	replicas := replicasOf(d.Spec.Replicas)
	recreate := d.Spec.Strategy.Type == api.RecreateDeploymentStrategyType
	progressed := false
	switch {
	case newRS == nil && recreate && oldPodsLeft(old):
		// Kubernetes' rolloutRecreate creates the new ReplicaSet only
		// once no old pod is left, so that nothing runs beside them.
	case newRS == nil:
		// Created at the size the strategy gives it now, in one write, as
		// Kubernetes' getNewReplicaSet (NewRSNewReplicas): replicas, or
		// as many as maxSurge allows beside the old ReplicaSets.
		size := replicas
		if !recreate {
			in, _ := rollingOf(replicas, surge, unavailable, RSCounts{}, old)
			size = newRSReplicas(in)
		}
		created, err := r.createReplicaSet(ctx, d, hash, revision, size, surge)
		if err != nil {
			return nil, false, err
		}
		newRS, progressed = created, true
	case revisionOf(newRS) < revision || newRS.Spec.MinReadySeconds != d.Spec.MinReadySeconds || !annotationsCopied(d, newRS):
		// Rolled back to an older template, minReadySeconds changed, or
		// the Deployment was annotated.
		updated, err := r.updateNewReplicaSet(ctx, d, newRS, max(revision, revisionOf(newRS)))
		if err != nil {
			return nil, false, err
		}
		newRS = updated
	}
	var target map[*api.ReplicaSet]int32
	if recreate {
		target = recreateStep(replicas, newRS, old)
	} else {
		in, byName := rollingOf(replicas, surge, unavailable, countsOf(newRS), old)
		step := RollingStep(in)
		target = map[*api.ReplicaSet]int32{newRS: step.NewReplicas}
		for name, n := range step.Old {
			target[byName[name]] = n
		}
	}
	var errs []error
	for rs, n := range target {
		if replicasOf(rs.Spec.Replicas) == n {
			continue
		}
		updated, err := r.scale(ctx, d, rs, n, surge)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		progressed = true
		if rs == newRS {
			newRS = updated
		}
	}
	return newRS, progressed, errors.Join(errs...)
}

// rollingOf is the state of a rolling update RollingStep starts from, the
// old ReplicaSets that have or are asked for pods in it, and every old
// ReplicaSet by name.
func rollingOf(replicas, surge, unavailable int32, newRS RSCounts, old []*api.ReplicaSet) (Rollout, map[string]*api.ReplicaSet) {
	in := Rollout{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, New: newRS}
	byName := make(map[string]*api.ReplicaSet, len(old))
	for _, rs := range old {
		if replicasOf(rs.Spec.Replicas) > 0 || rs.Status.Replicas > 0 {
			in.Old = append(in.Old, countsOf(rs))
		}
		byName[rs.Name] = rs
	}
	return in, byName
}

// scaleProportionally scales the ReplicaSets to the Deployment's replicas
// as ProportionalScale says, and returns the new ReplicaSet as it now
// stands.
func (r *DeploymentReconciler) scaleProportionally(ctx context.Context, d *api.Deployment, newRS *api.ReplicaSet, old []*api.ReplicaSet, surge int32) (*api.ReplicaSet, error) {
	target := ProportionalScale(scalingOf(d, newRS, old, surge))
	var errs []error
	for _, rs := range append(slices.Clone(old), newRS) {
		if rs == nil {
			continue
		}
		n, ok := target[rs.Name]
		if !ok || n == replicasOf(rs.Spec.Replicas) && scaledFor(rs, d, surge) {
			continue
		}
		updated, err := r.scale(ctx, d, rs, n, surge)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if rs == newRS {
			newRS = updated
		}
	}
	return newRS, errors.Join(errs...)
}

// scalingOf is what ProportionalScale needs of a Deployment and its
// ReplicaSets.
func scalingOf(d *api.Deployment, newRS *api.ReplicaSet, old []*api.ReplicaSet, surge int32) Scaling {
	s := Scaling{
		Replicas: replicasOf(d.Spec.Replicas), MaxSurge: surge, StatusReplicas: d.Status.Replicas,
		RollingUpdate: d.Spec.Strategy.Type == api.RollingUpdateDeploymentStrategyType,
	}
	for _, rs := range old {
		s.Old = append(s.Old, scaleRSOf(rs))
	}
	if newRS != nil {
		n := scaleRSOf(newRS)
		s.New = &n
	}
	return s
}

func scaleRSOf(rs *api.ReplicaSet) ScaleRS {
	out := ScaleRS{RSCounts: countsOf(rs)}
	if n, err := strconv.ParseInt(rs.Annotations[api.AnnotationDesiredReplicas], 10, 32); err == nil {
		out.Desired, out.HasDesired = int32(n), true
	}
	if n, err := strconv.ParseInt(rs.Annotations[api.AnnotationMaxReplicas], 10, 32); err == nil {
		out.MaxReplicas = int32(n)
	}
	return out
}

// scaledFor reports whether the ReplicaSet's annotations record the
// Deployment's replicas and surge as they are.
func scaledFor(rs *api.ReplicaSet, d *api.Deployment, surge int32) bool {
	replicas := replicasOf(d.Spec.Replicas)
	return rs.Annotations[api.AnnotationDesiredReplicas] == strconv.Itoa(int(replicas)) &&
		rs.Annotations[api.AnnotationMaxReplicas] == strconv.Itoa(int(replicas+surge))
}

// recreateStep scales every old ReplicaSet to zero, and the new one to
// replicas once no old pod is left, terminating ones included, as
// Kubernetes' oldPodsRunning.
func recreateStep(replicas int32, newRS *api.ReplicaSet, old []*api.ReplicaSet) map[*api.ReplicaSet]int32 {
	target := map[*api.ReplicaSet]int32{}
	for _, rs := range old {
		target[rs] = 0
	}
	if newRS != nil && !oldPodsLeft(old) {
		target[newRS] = replicas
	}
	return target
}

// oldPodsLeft reports whether any old ReplicaSet may still have a pod
// that has not ended.
func oldPodsLeft(old []*api.ReplicaSet) bool {
	return slices.ContainsFunc(old, oldPodsRunning)
}

// oldPodsRunning reports whether an old ReplicaSet may still have a pod
// that has not ended: one it is asked for, one it counts, one being
// deleted, or one its status, counted before its last change of spec,
// does not show yet. The ReplicaSet's status, rather than its pods, is
// read so that a rollout costs nothing per pod; the status changes, and
// brings the Deployment back, when its last pod goes.
func oldPodsRunning(rs *api.ReplicaSet) bool {
	return replicasOf(rs.Spec.Replicas) > 0 || rs.Status.Replicas > 0 || rs.Status.TerminatingReplicas > 0 ||
		rs.Status.ObservedGeneration < rs.Generation
}

func countsOf(rs *api.ReplicaSet) RSCounts {
	return RSCounts{Name: rs.Name, Created: rs.CreationTimestamp.Time, Replicas: replicasOf(rs.Spec.Replicas), Available: rs.Status.AvailableReplicas}
}

func revisionOf(rs *api.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations[AnnotationRevision], 10, 64)
	return n
}

func maxRevision(rss []*api.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, revisionOf(rs))
	}
	return m
}

// createReplicaSet creates the ReplicaSet of the Deployment's template
// with replicas, and the Deployment's replicas and surge they were given
// for in its annotations, as scale writes them.
func (r *DeploymentReconciler) createReplicaSet(ctx context.Context, d *api.Deployment, hash string, revision int64, replicas, surge int32) (*api.ReplicaSet, error) {
	template := d.Spec.Template.DeepCopy()
	template.Labels = withLabel(template.Labels, LabelPodTemplateHash, hash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, LabelPodTemplateHash, hash)
	annotations := map[string]string{}
	copyAnnotations(d, annotations)
	annotations[AnnotationRevision] = strconv.FormatInt(revision, 10)
	scaledAnnotations(annotations, d, surge)
	rs := &api.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       d.Namespace,
			Name:            d.Name + "-" + hash,
			Labels:          maps.Clone(template.Labels),
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, deploymentKind.GVK)},
		},
		Spec: api.ReplicaSetSpec{Replicas: &replicas, MinReadySeconds: d.Spec.MinReadySeconds, Selector: selector, Template: *template},
	}
	api.Default(rs)
	obj, err := r.store.Create(ctx, rs)
	if err == nil {
		if replicas > 0 {
			r.events.Event(d, api.EventTypeNormal, ReasonScalingReplicaSet,
				fmt.Sprintf("Scaled up replica set %s to %d from 0", rs.Name, replicas))
		}
		return obj.(*api.ReplicaSet), nil
	}
	if !store.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	// A ReplicaSet of that name that is not ours, or runs another
	// template: count a collision so the next hash differs.
	existing, gerr := r.store.Get(replicaSetKind, rs.Namespace, rs.Name)
	if gerr == nil {
		if ref := api.ControllerOf(existing); ref != nil && ref.UID == d.UID && existing.GetLabels()[LabelPodTemplateHash] == hash {
			return existing.(*api.ReplicaSet), nil
		}
	}
	c := d.DeepCopy()
	n := int32(1)
	if c.Status.CollisionCount != nil {
		n = *c.Status.CollisionCount + 1
	}
	c.Status.CollisionCount = &n
	if _, uerr := r.store.Update(ctx, c); uerr != nil {
		return nil, fmt.Errorf("record hash collision of deployment %s/%s: %w", d.Namespace, d.Name, uerr)
	}
	return nil, fmt.Errorf("replicaset %s/%s exists and is not this template's; collision count now %d", rs.Namespace, rs.Name, n)
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[k] = v
	return out
}

// copyAnnotations copies the Deployment's annotations, but its own, to a
// ReplicaSet's, as Kubernetes' copyDeploymentAnnotationsToReplicaSet.
func copyAnnotations(d *api.Deployment, to map[string]string) {
	for k, v := range d.Annotations {
		if !api.DeploymentOwnAnnotation(k) {
			to[k] = v
		}
	}
}

// annotationsCopied reports whether the ReplicaSet carries every
// annotation of the Deployment it is to carry.
func annotationsCopied(d *api.Deployment, rs *api.ReplicaSet) bool {
	for k, v := range d.Annotations {
		if got, ok := rs.Annotations[k]; !api.DeploymentOwnAnnotation(k) && (!ok || got != v) {
			return false
		}
	}
	return true
}

// updateNewReplicaSet brings the new ReplicaSet's revision,
// minReadySeconds and annotations to the Deployment's.
func (r *DeploymentReconciler) updateNewReplicaSet(ctx context.Context, d *api.Deployment, rs *api.ReplicaSet, revision int64) (*api.ReplicaSet, error) {
	c := rs.DeepCopy()
	c.Spec.MinReadySeconds = d.Spec.MinReadySeconds
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	copyAnnotations(d, c.Annotations)
	c.Annotations[AnnotationRevision] = strconv.FormatInt(revision, 10)
	obj, err := r.store.Update(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("update replicaset %s/%s of deployment %s: %w", rs.Namespace, rs.Name, d.Name, err)
	}
	return obj.(*api.ReplicaSet), nil
}

// scale writes a ReplicaSet's replicas, with the Deployment's replicas
// and surge (the Deployment's, as rollingBounds reads it) they were given
// for in its annotations, which ProportionalScale reads; and records a
// change of them on the Deployment d.
func (r *DeploymentReconciler) scale(ctx context.Context, d *api.Deployment, rs *api.ReplicaSet, replicas, surge int32) (*api.ReplicaSet, error) {
	// A shallow copy with annotations of its own: the template is
	// shared with the stored version, which nothing changes in place.
	c := new(api.ReplicaSet)
	*c = *rs
	c.Spec.Replicas = &replicas
	c.Annotations = maps.Clone(rs.Annotations)
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	scaledAnnotations(c.Annotations, d, surge)
	obj, err := r.store.Update(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("scale replicaset %s/%s to %d: %w", rs.Namespace, rs.Name, replicas, err)
	}
	if from := replicasOf(rs.Spec.Replicas); from != replicas {
		dir := "up"
		if replicas < from {
			dir = "down"
		}
		r.events.Event(d, api.EventTypeNormal, ReasonScalingReplicaSet,
			fmt.Sprintf("Scaled %s replica set %s to %d from %d", dir, rs.Name, replicas, from))
	}
	return obj.(*api.ReplicaSet), nil
}

// scaledAnnotations records in a ReplicaSet's annotations the
// Deployment's replicas and surge its size was given for, which
// ProportionalScale reads, as Kubernetes' SetReplicasAnnotations.
func scaledAnnotations(a map[string]string, d *api.Deployment, surge int32) {
	desired := replicasOf(d.Spec.Replicas)
	a[api.AnnotationDesiredReplicas] = strconv.Itoa(int(desired))
	a[api.AnnotationMaxReplicas] = strconv.Itoa(int(desired + surge))
}

// cleanup deletes the oldest ReplicaSets scaled to zero beyond
// revisionHistoryLimit.
func (r *DeploymentReconciler) cleanup(ctx context.Context, d *api.Deployment, old []*api.ReplicaSet) error {
	limit := int32(api.DefaultRevisionHistoryLimit)
	if d.Spec.RevisionHistoryLimit != nil {
		limit = *d.Spec.RevisionHistoryLimit
	}
	var idle []*api.ReplicaSet
	for _, rs := range old {
		if replicasOf(rs.Spec.Replicas) == 0 && rs.Status.Replicas == 0 && rs.DeletionTimestamp == nil &&
			rs.Generation <= rs.Status.ObservedGeneration {
			idle = append(idle, rs)
		}
	}
	excess := len(idle) - int(limit)
	if excess <= 0 {
		return nil
	}
	slices.SortStableFunc(idle, func(a, b *api.ReplicaSet) int {
		if ra, rb := revisionOf(a), revisionOf(b); ra != rb {
			return int(ra - rb)
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	var errs []error
	for _, rs := range idle[:excess] {
		_, err := r.store.Delete(ctx, replicaSetKind, rs.Namespace, rs.Name,
			store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(rs.UID)}})
		if err != nil && !store.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete old replicaset %s/%s: %w", rs.Namespace, rs.Name, err))
		}
	}
	return errors.Join(errs...)
}

// claimReplicaSets returns the ReplicaSets the Deployment controls, after
// adopting matching orphans and releasing those that stop matching.
func (r *DeploymentReconciler) claimReplicaSets(ctx context.Context, d *api.Deployment, sel labels.Selector) ([]*api.ReplicaSet, error) {
	owned, _, err := r.store.List(replicaSetKind, store.Filter{Namespace: d.Namespace, Index: store.IndexOwner, Value: string(d.UID)})
	if err != nil {
		return nil, fmt.Errorf("list replicasets of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	// Only orphans are adopted: the index keeps this from reading every
	// ReplicaSet of the namespace on each sync.
	matching, _, err := r.store.List(replicaSetKind, store.Filter{Namespace: d.Namespace, Index: store.IndexOrphan, Value: d.Namespace, Labels: sel})
	if err != nil {
		return nil, fmt.Errorf("list replicasets matching deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	deleting := d.DeletionTimestamp != nil
	var (
		claimed []*api.ReplicaSet
		errs    []error
		seen    = map[string]bool{}
	)
	for _, obj := range owned {
		rs := obj.(*api.ReplicaSet)
		if ref := api.ControllerOf(rs); ref == nil || ref.UID != d.UID {
			continue
		}
		seen[rs.Name] = true
		if deleting || sel.Matches(labels.Set(rs.Labels)) {
			claimed = append(claimed, rs)
			continue
		}
		c := rs.DeepCopy()
		c.OwnerReferences = slices.DeleteFunc(c.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == d.UID })
		if _, err := r.store.Update(ctx, c); err != nil && !store.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("release replicaset %s/%s: %w", rs.Namespace, rs.Name, err))
		}
	}
	for _, obj := range matching {
		rs := obj.(*api.ReplicaSet)
		if seen[rs.Name] || deleting || rs.DeletionTimestamp != nil || api.ControllerOf(rs) != nil {
			continue
		}
		c := rs.DeepCopy()
		c.OwnerReferences = append(c.OwnerReferences, *metav1.NewControllerRef(d, deploymentKind.GVK))
		adopted, err := r.store.Update(ctx, c)
		switch {
		case store.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("adopt replicaset %s/%s: %w", rs.Namespace, rs.Name, err))
		default:
			claimed = append(claimed, adopted.(*api.ReplicaSet))
		}
	}
	slices.SortFunc(claimed, func(a, b *api.ReplicaSet) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return claimed, errors.Join(errs...)
}

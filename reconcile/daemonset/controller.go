package daemonset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/reconcile/history"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "daemonset"

// EventComponent is the source of the controller's events, as
// kube-controller-manager names it.
const EventComponent = "daemonset-controller"

// Reasons of the controller's events, as Kubernetes names them.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedCreate     = "FailedCreate"
	ReasonFailedDaemonPod  = "FailedDaemonPod"
)

// BurstPods caps the pods one store transaction creates, so that a
// DaemonSet on thousands of nodes is created in a few commits rather than
// one per pod or one huge one.
const BurstPods = 500

var (
	dsKind   = api.MustLookupResource("daemonsets")
	podKind  = api.MustLookupResource("pods")
	nodeKind = api.MustLookupResource("nodes")
)

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	// Events receives what the controller does; nil records nothing.
	Events *event.Recorder
}

// Reconciler converges one DaemonSet, named by its key.
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

// NewController returns the DaemonSet controller, fed by watches on
// DaemonSets, their pods and the nodes.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	var c clock.PassiveClock
	if opts.Clock != nil {
		c = opts.Clock
	}
	r := NewReconciler(s, c, opts.Events)
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock: opts.Clock, Backoff: opts.Backoff, Logger: opts.Logger, Store: s,
		Watches: []reconcile.Watch{{Kind: dsKind}, {Kind: podKind, Keys: PodKeys}, {Kind: nodeKind, Keys: r.NodeKeys}},
	})
}

// PodKeys maps a pod change to the key of the DaemonSet controlling it.
func PodKeys(e store.Event) []string {
	if ref := api.ControllerOf(e.Object); ref != nil && ref.Kind == dsKind.GVK.Kind {
		return []string{reconcile.Key(e.Object.GetNamespace(), ref.Name)}
	}
	return nil
}

// NodeKeys maps a node's arrival, departure or a change of what placement
// reads (labels, taints) to every DaemonSet; a heartbeat maps to none.
func (r *Reconciler) NodeKeys(e store.Event) []string {
	if e.Type == store.Modified && e.Old != nil {
		o, n := e.Old.(*api.Node), e.Object.(*api.Node)
		if maps.Equal(o.Labels, n.Labels) && equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) {
			return nil
		}
	}
	var keys []string
	_ = r.store.Snapshot().Each(dsKind, store.Filter{}, func(o api.Object) bool {
		keys = append(keys, reconcile.ObjectKey(o))
		return true
	})
	return keys
}

// nodeState is one node's part of a sync.
type nodeState struct {
	node           *api.Node
	shouldRun      bool
	shouldContinue bool
	// pods are the DaemonSet's pods for the node that are not being
	// deleted, oldest first.
	pods []*api.Pod
}

// Reconcile converges the DaemonSet named key.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := reconcile.SplitKey(key)
	obj, err := r.store.Get(dsKind, ns, name)
	if store.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	ds := obj.(*api.DaemonSet)
	if ds.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() {
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("daemonset %s: spec.selector: %v", key, err))
	}
	collisions := int32(0)
	if ds.Status.CollisionCount != nil {
		collisions = *ds.Status.CollisionCount
	}
	revs, err := history.Owned(r.store, ds)
	if err != nil {
		return reconcile.Result{}, err
	}
	data, err := history.Patch(&ds.Spec.Template)
	if err != nil {
		return reconcile.Result{}, err
	}
	rev, err := history.Ensure(ctx, r.store, ds, dsKind.GVK, ds.Spec.Template.Labels, data, revs, &collisions)
	if err != nil {
		return reconcile.Result{}, err
	}
	hash := rev.Labels[api.LabelControllerRevisionHashKey]
	tpl, err := rev.Template()
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}

	nodes, orphaned, err := r.read(ds)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := r.clock.Now()
	changed, manageErr := r.manage(ctx, ds, tpl, hash, nodes, orphaned)
	if !changed && manageErr == nil && ds.Spec.UpdateStrategy.Type == api.RollingUpdateDaemonSetStrategyType {
		changed, manageErr = r.rollingUpdate(ctx, ds, tpl, hash, nodes, now)
	}
	if changed {
		// The status counts what is there now.
		if nodes, _, err = r.read(ds); err != nil {
			return reconcile.Result{}, errors.Join(manageErr, err)
		}
	}
	wait, statusErr := r.writeStatus(ctx, ds, hash, collisions, nodes, now)
	trimErr := r.trim(ctx, ds, rev, nodes)
	if err := errors.Join(manageErr, statusErr, trimErr); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// read returns every node with the DaemonSet's pods for it, and the pods
// for nodes that do not exist (or for no node).
func (r *Reconciler) read(ds *api.DaemonSet) (map[string]*nodeState, []*api.Pod, error) {
	snap := r.store.Snapshot()
	nodes := map[string]*nodeState{}
	err := snap.Each(nodeKind, store.Filter{}, func(o api.Object) bool {
		n := o.(*api.Node)
		run, cont := placement(&ds.Spec.Template.Spec, n)
		nodes[n.Name] = &nodeState{node: n, shouldRun: run, shouldContinue: cont}
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	var orphaned []*api.Pod
	err = snap.Each(podKind, store.Filter{Namespace: ds.Namespace, Index: store.IndexOwner, Value: string(ds.UID)}, func(o api.Object) bool {
		p := o.(*api.Pod)
		if ref := api.ControllerOf(p); ref == nil || ref.UID != ds.UID || p.DeletionTimestamp != nil {
			return true
		}
		if n := nodes[targetNode(p)]; n != nil {
			n.pods = append(n.pods, p)
		} else {
			orphaned = append(orphaned, p)
		}
		return true
	})
	for _, n := range nodes {
		slices.SortFunc(n.pods, func(a, b *api.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	}
	return nodes, orphaned, err
}

// manage makes every node that should run the pod have one, and removes
// the pods of nodes that may not keep them, of nodes gone, failed ones and
// duplicates (beyond one old and one new pod during a surge). It reports
// whether it changed anything: the rolling update waits for the next sync.
func (r *Reconciler) manage(ctx context.Context, ds *api.DaemonSet, tpl *api.PodTemplateSpec, hash string, nodes map[string]*nodeState, orphaned []*api.Pod) (bool, error) {
	var create []string
	del := slices.Clone(orphaned)
	surge := surgeAllowed(ds)
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[name]
		var live []*api.Pod
		for _, p := range n.pods {
			if p.Status.Phase == api.PodFailed {
				r.events.Event(ds, api.EventTypeWarning, ReasonFailedDaemonPod, fmt.Sprintf("Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, name))
				del = append(del, p)
				continue
			}
			live = append(live, p)
		}
		switch {
		case !n.shouldContinue:
			del = append(del, live...)
		case n.shouldRun && len(live) == 0:
			create = append(create, name)
		case len(live) > 1:
			del = append(del, duplicates(live, hash, surge)...)
		}
	}
	if len(create) == 0 && len(del) == 0 {
		return false, nil
	}
	return true, r.sync(ctx, ds, tpl, hash, create, del)
}

// duplicates are the pods of a node beyond the one to keep, the oldest;
// during a surge the oldest old pod and the newest new one are kept.
func duplicates(pods []*api.Pod, hash string, surge bool) []*api.Pod {
	if !surge {
		return pods[1:]
	}
	var out []*api.Pod
	var keptOld, keptNew *api.Pod
	for i := len(pods) - 1; i >= 0; i-- { // newest first, for the new one
		p := pods[i]
		if p.Labels[api.LabelControllerRevisionHash] == hash && keptNew == nil {
			keptNew = p
			continue
		}
		if p.Labels[api.LabelControllerRevisionHash] != hash {
			continue
		}
		out = append(out, p)
	}
	for _, p := range pods { // oldest first, for the old one
		if p.Labels[api.LabelControllerRevisionHash] == hash {
			continue
		}
		if keptOld == nil {
			keptOld = p
			continue
		}
		out = append(out, p)
	}
	return out
}

// sync creates pods on the nodes named and deletes the pods given.
func (r *Reconciler) sync(ctx context.Context, ds *api.DaemonSet, tpl *api.PodTemplateSpec, hash string, create []string, del []*api.Pod) error {
	var errs []error
	for _, p := range del {
		_, err := r.store.Delete(ctx, podKind, p.Namespace, p.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(p.UID)}})
		switch {
		case err == nil:
			r.events.Event(ds, api.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: "+p.Name)
		case !store.IsNotFound(err):
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	for batch := range slices.Chunk(create, BurstPods) {
		var names []string
		_, err := r.store.Txn(ctx, func(tx *store.Txn) error {
			names = names[:0]
			for _, node := range batch {
				p, err := tx.Create(newPod(ds, tpl, hash, node))
				if err != nil {
					return err
				}
				names = append(names, p.GetName())
			}
			return nil
		})
		if err != nil {
			if !store.IsNamespaceTerminating(err) {
				r.events.Event(ds, api.EventTypeWarning, ReasonFailedCreate, "Error creating: "+err.Error())
			}
			errs = append(errs, fmt.Errorf("create pods of daemonset %s/%s: %w", ds.Namespace, ds.Name, err))
			break
		}
		for _, n := range names {
			r.events.Event(ds, api.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: "+n)
		}
	}
	return errors.Join(errs...)
}

// writeStatus counts the nodes into the status; wait, if positive, is
// when a ready pod becomes available.
func (r *Reconciler) writeStatus(ctx context.Context, ds *api.DaemonSet, hash string, collisions int32, nodes map[string]*nodeState, now time.Time) (time.Duration, error) {
	next := api.DaemonSetStatus{ObservedGeneration: ds.Generation, Conditions: ds.Status.Conditions}
	if collisions != 0 || ds.Status.CollisionCount != nil {
		next.CollisionCount = &collisions
	}
	minReady := time.Duration(ds.Spec.MinReadySeconds) * time.Second
	var wait time.Duration
	for _, n := range nodes {
		if !n.shouldRun {
			if len(n.pods) > 0 {
				next.NumberMisscheduled++
			}
			continue
		}
		next.DesiredNumberScheduled++
		if len(n.pods) == 0 {
			continue
		}
		next.CurrentNumberScheduled++
		var ready, avail, updated bool
		for _, p := range n.pods {
			if p.Ready() {
				ready = true
			}
			ok, left := available(p, minReady, now)
			avail = avail || ok
			if left > 0 && (wait == 0 || left < wait) {
				wait = left
			}
			if p.Labels[api.LabelControllerRevisionHash] == hash {
				updated = true
			}
		}
		if ready {
			next.NumberReady++
		}
		if avail {
			next.NumberAvailable++
		}
		if updated {
			next.UpdatedNumberScheduled++
		}
	}
	next.NumberUnavailable = next.DesiredNumberScheduled - next.NumberAvailable
	if equality.Semantic.DeepEqual(next, ds.Status) {
		return wait, nil
	}
	c := ds.DeepCopy()
	c.Status = next
	if _, err := r.store.Update(ctx, c); err != nil {
		return wait, fmt.Errorf("update status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	return wait, nil
}

// trim deletes the oldest revisions beyond revisionHistoryLimit, keeping
// the current one and those of live pods.
func (r *Reconciler) trim(ctx context.Context, ds *api.DaemonSet, cur *api.ControllerRevision, nodes map[string]*nodeState) error {
	revs, err := history.Owned(r.store, ds)
	if err != nil {
		return err
	}
	hashes := map[string]bool{}
	for _, n := range nodes {
		for _, p := range n.pods {
			hashes[p.Labels[api.LabelControllerRevisionHash]] = true
		}
	}
	live := map[string]bool{cur.Name: true}
	for _, rv := range revs {
		if hashes[rv.Labels[api.LabelControllerRevisionHashKey]] {
			live[rv.Name] = true
		}
	}
	limit := api.DefaultRevisionHistoryLimit
	if l := ds.Spec.RevisionHistoryLimit; l != nil {
		limit = *l
	}
	return history.Trim(ctx, r.store, revs, live, limit)
}

// available reports whether a pod not being deleted has been ready for
// minReady at now and, if not yet, how long until it is.
func available(p *api.Pod, minReady time.Duration, now time.Time) (bool, time.Duration) {
	if p.DeletionTimestamp != nil {
		return false, 0
	}
	return p.AvailableAfter(minReady, now)
}

package volume

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "volume"

// EventComponent is the source of the controller's events, Kubernetes'
// name for it.
const EventComponent = "persistentvolume-controller"

// DefaultNodeGracePeriod is how long a released volume waits for its
// node to come back before it is marked Failed.
const DefaultNodeGracePeriod = 2 * time.Minute

// resyncPeriod is how often every class's pending claims are looked at
// again without a change to prompt it.
const resyncPeriod = time.Minute

var (
	claimKind  = api.MustLookupResource("persistentvolumeclaims")
	volumeKind = api.MustLookupResource("persistentvolumes")
	classKind  = api.MustLookupResource("storageclasses")
	nodeKind   = api.MustLookupResource("nodes")
	podKind    = api.MustLookupResource("pods")
)

// Key prefixes: the controller converges claims, volumes, and the pending
// claims of a class when volumes of it become available.
const (
	prefixClaim  = "claim:"
	prefixVolume = "volume:"
	prefixClass  = "class:"
)

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	// Events tells users about a claim or a volume (FailedBinding,
	// ProvisioningSucceeded, …); nil drops them.
	Events reconcile.EventRecorder
	// VolumesChanged is called after a claim is bound or volumes become
	// available, so that the scheduler tries the pods waiting for them
	// again at once; nil does nothing.
	VolumesChanged func()
	// NodeGracePeriod is how long a released volume whose node has no
	// Node object waits before it is marked Failed (default 2m).
	NodeGracePeriod time.Duration
}

// Reconciler binds claims, provisions local-path volumes and reclaims
// released ones. It keeps an index of the available volumes, fed by the
// volume watch, so that binding a claim does not read every volume.
type Reconciler struct {
	store  *store.Store
	clock  clock.Clock
	events reconcile.EventRecorder
	grace  time.Duration
	// changed tells the scheduler that claims or volumes changed.
	changed func()

	mu    sync.Mutex
	index *Index
	// seen is the resourceVersion of each volume the index last saw, so
	// that an event older than a write the index already knows of (its
	// own bindings) does not bring a bound volume back.
	seen    map[string]uint64
	loaded  bool
	enqueue func(key string)
}

// newReconciler returns the Reconciler alone; NewController wires it.
func newReconciler(s *store.Store, opts Options) *Reconciler {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.NodeGracePeriod <= 0 {
		opts.NodeGracePeriod = DefaultNodeGracePeriod
	}
	events := opts.Events
	if events == nil {
		events = reconcile.NoEvents{}
	}
	changed := opts.VolumesChanged
	if changed == nil {
		changed = func() {}
	}
	return &Reconciler{
		changed: changed,
		store:   s,
		clock:   opts.Clock,
		events:  events,
		grace:   opts.NodeGracePeriod,
		index:   NewIndex(),
		seen:    map[string]uint64{},
		enqueue: func(string) {},
	}
}

// NewController returns the volume controller, fed by claims, volumes,
// storage classes, and the pods that consume claims.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	r := newReconciler(s, opts)
	c := reconcile.NewController(Name, r, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: []reconcile.Watch{
			{Kind: volumeKind, Keys: r.observeVolume},
			{Kind: claimKind, Keys: r.claimKeys},
			{Kind: classKind, Keys: func(e store.Event) []string {
				return []string{prefixClass + e.Object.GetName()}
			}},
			{Kind: podKind, Keys: consumerKeys},
			{Kind: nodeKind, Keys: r.nodeKeys},
		},
		// A safety net, as Kubernetes' volume controller resyncs: every
		// class's pending claims are looked at again now and then.
		ResyncPeriod: resyncPeriod,
		ListKeys: func(context.Context) ([]string, error) {
			classes, _, err := s.List(classKind, store.Filter{})
			if err != nil {
				return nil, fmt.Errorf("list storageclasses: %w", err)
			}
			keys := []string{prefixClass}
			for _, c := range classes {
				keys = append(keys, prefixClass+c.GetName())
			}
			return keys, nil
		},
	})
	r.enqueue = c.Enqueue
	return c
}

// observeVolume keeps the index in step with the store and names the keys
// a volume change concerns: the volume, and the pending claims of its
// class when it is available.
func (r *Reconciler) observeVolume(e store.Event) []string {
	pv, ok := e.Object.(*api.PersistentVolume)
	if !ok {
		return nil
	}
	keys := []string{prefixVolume + pv.Name}
	if r.observe(pv, e.Type == store.Deleted, e.Revision) && Available(pv) {
		keys = append(keys, prefixClass+pv.Spec.StorageClassName)
	}
	if ref := pv.Spec.ClaimRef; ref != nil {
		keys = append(keys, prefixClaim+reconcile.Key(ref.Namespace, ref.Name))
	}
	return keys
}

// observe records pv in the index unless the index already knows a later
// version; it reports whether it did. A deletion at revision rev leaves a
// tombstone, so that a stale listing does not bring the volume back.
func (r *Reconciler) observe(pv *api.PersistentVolume, deleted bool, rev uint64) bool {
	rv, _ := strconv.ParseUint(pv.ResourceVersion, 10, 64)
	r.mu.Lock()
	defer r.mu.Unlock()
	if rv != 0 && rv < r.seen[pv.Name] {
		return false
	}
	if deleted {
		r.seen[pv.Name] = max(rv+1, rev)
		r.index.Remove(pv.Name)
		return true
	}
	r.seen[pv.Name] = rv
	r.index.Set(pv)
	return true
}

// loadIndex fills the index from a snapshot the first time it is needed,
// so that claims reconciled before the volume watch has listed find the
// volumes already there; later versions seen through the watch win. It
// must be called with r.mu held.
func (r *Reconciler) loadIndex() error {
	if r.loaded {
		return nil
	}
	err := r.store.Snapshot().Each(volumeKind, store.Filter{}, func(o api.Object) bool {
		pv := o.(*api.PersistentVolume)
		rv, _ := strconv.ParseUint(pv.ResourceVersion, 10, 64)
		if rv >= r.seen[pv.Name] {
			r.seen[pv.Name] = rv
			r.index.Set(pv)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("list volumes: %w", err)
	}
	r.loaded = true
	return nil
}

// claimKeys names the key a claim change concerns: its own, or, for a
// pending claim that binds at once, its class's, so that many such claims
// are bound together in a few transactions (syncClass).
func (r *Reconciler) claimKeys(e store.Event) []string {
	c, ok := e.Object.(*api.PersistentVolumeClaim)
	if !ok || e.Type == store.Deleted || c.Spec.VolumeName != "" || c.Status.Phase != api.ClaimPending {
		return []string{prefixClaim + reconcile.ObjectKey(e.Object)}
	}
	if name := claimClass(c); name != "" {
		cls, err := r.class(name)
		if err != nil || (cls != nil && bindingMode(cls) != api.VolumeBindingImmediate) {
			return []string{prefixClaim + reconcile.ObjectKey(e.Object)}
		}
	}
	return []string{prefixClass + claimClass(c)}
}

// nodeKeys names, when a node is deleted, the volumes waiting for its
// agent, so that they are marked Failed after the grace period rather than
// wait for ever.
func (r *Reconciler) nodeKeys(e store.Event) []string {
	if e.Type != store.Deleted {
		return nil
	}
	sel := labels.SelectorFromSet(labels.Set{api.LabelReclaimNode: e.Object.GetName()})
	pvs, _, err := r.store.List(volumeKind, store.Filter{Labels: sel})
	if err != nil {
		return nil
	}
	keys := make([]string, len(pvs))
	for i, pv := range pvs {
		keys[i] = prefixVolume + pv.GetName()
	}
	return keys
}

// consumerKeys names the claims of a pod bound to a node: a claim waiting
// for its first consumer learns its node from them.
func consumerKeys(e store.Event) []string {
	pod, ok := e.Object.(*api.Pod)
	if !ok || pod.Spec.NodeName == "" || e.Type == store.Deleted {
		return nil
	}
	return claimKeysOf(pod)
}

// claimKeysOf names the claims a pod uses.
func claimKeysOf(pod *api.Pod) []string {
	var keys []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			keys = append(keys, prefixClaim+reconcile.Key(pod.Namespace, v.PersistentVolumeClaim.ClaimName))
		}
	}
	return keys
}

// conflictRetry is how soon a key whose write lost a race with another
// writer is looked at again: the other write is expected, not an error.
const conflictRetry = 50 * time.Millisecond

// Reconcile dispatches a key to the claim, volume or class it names. A
// write that met a newer version of its object is retried soon, quietly:
// with the scheduler, the API and this controller's own workers writing
// the same claims and volumes, that is the normal case.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	res, err := r.dispatch(ctx, key)
	if store.IsConflict(err) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

func (r *Reconciler) dispatch(ctx context.Context, key string) (reconcile.Result, error) {
	if rest, ok := strings.CutPrefix(key, prefixClaim); ok {
		ns, name := reconcile.SplitKey(rest)
		return r.syncClaim(ctx, ns, name)
	}
	if rest, ok := strings.CutPrefix(key, prefixVolume); ok {
		return r.syncVolume(ctx, rest)
	}
	if rest, ok := strings.CutPrefix(key, prefixClass); ok {
		return reconcile.Result{}, r.syncClass(ctx, rest)
	}
	return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("unknown key %q", key))
}

package gc

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "garbage-collector"

// The finalizers by which the API server records a deletion's propagation
// policy, as Kubernetes names them.
const (
	FinalizerOrphan     = metav1.FinalizerOrphanDependents
	FinalizerForeground = metav1.FinalizerDeleteDependents
)

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
}

// Collector is the garbage collector's Reconciler. Its keys name an object
// of any kind: "<resource.group>|<namespace>/<name>".
type Collector struct {
	store  *store.Store
	byName map[string]*api.Kind
}

// NewCollector returns the Reconciler alone, for tests.
func NewCollector(s *store.Store) *Collector {
	c := &Collector{store: s, byName: map[string]*api.Kind{}}
	for _, k := range api.Kinds() {
		c.byName[k.GroupResource().String()] = k
	}
	return c
}

// NewController returns the garbage collector, fed by a watch on every
// kind. Run it with Controller.Run(ctx, workers).
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	c := NewCollector(s)
	return reconcile.NewController(Name, c, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: c.Watches(),
	})
}

// Key names an object of kind k for the collector's queue.
func Key(k *api.Kind, namespace, name string) string {
	return k.GroupResource().String() + "|" + reconcile.Key(namespace, name)
}

func (c *Collector) splitKey(key string) (*api.Kind, string, string, error) {
	gr, rest, ok := strings.Cut(key, "|")
	k := c.byName[gr]
	if !ok || k == nil {
		return nil, "", "", fmt.Errorf("gc: bad key %q", key)
	}
	ns, name := reconcile.SplitKey(rest)
	return k, ns, name, nil
}

// Watches are one watch per kind: every object may own or be owned.
func (c *Collector) Watches() []reconcile.Watch {
	var ws []reconcile.Watch
	for _, k := range api.Kinds() {
		ws = append(ws, reconcile.Watch{Kind: k, Keys: c.Keys})
	}
	return ws
}

// Keys maps a change to the objects the collector must look at: the object
// itself if it has owners or a propagation finalizer; on its deletion, its
// dependents (whose references now dangle) and its owners (which may be
// waiting for it in a foreground deletion).
func (c *Collector) Keys(e store.Event) []string {
	obj := e.Object
	var keys []string
	self := Key(e.Kind, obj.GetNamespace(), obj.GetName())
	if e.Type != store.Deleted {
		if len(obj.GetOwnerReferences()) > 0 || (obj.GetDeletionTimestamp() != nil && hasPropagationFinalizer(obj)) {
			keys = append(keys, self)
		}
	}
	startedDeleting := e.Type == store.Modified && obj.GetDeletionTimestamp() != nil &&
		e.Old != nil && e.Old.GetDeletionTimestamp() == nil
	if e.Type == store.Deleted || startedDeleting {
		for _, ref := range obj.GetOwnerReferences() {
			if k, ok := c.ownerKind(ref); ok {
				keys = append(keys, Key(k, ownerNamespace(k, obj), ref.Name))
			}
		}
	}
	if e.Type == store.Deleted {
		_ = c.eachDependent(c.store.Snapshot(), e.Kind, obj, func(dk *api.Kind, d api.Object) error {
			keys = append(keys, Key(dk, d.GetNamespace(), d.GetName()))
			return nil
		})
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func hasPropagationFinalizer(obj api.Object) bool {
	fs := obj.GetFinalizers()
	return slices.Contains(fs, FinalizerOrphan) || slices.Contains(fs, FinalizerForeground)
}

// ownerKind resolves an ownerReference's kind, by group, version and kind,
// or failing the version, by group and kind.
func (c *Collector) ownerKind(ref metav1.OwnerReference) (*api.Kind, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, false
	}
	if k, ok := api.KindFor(gv.WithKind(ref.Kind)); ok {
		return k, true
	}
	for _, k := range api.Kinds() {
		if k.GVK.Group == gv.Group && k.GVK.Kind == ref.Kind {
			return k, true
		}
	}
	return nil, false
}

// ownerNamespace is where an owner of kind k of obj lives: obj's namespace,
// or none for a cluster-scoped owner.
func ownerNamespace(k *api.Kind, obj api.Object) string {
	if k.Namespaced {
		return obj.GetNamespace()
	}
	return ""
}

// reader is what the collector reads through: the store or a snapshot.
type reader interface {
	List(k *api.Kind, f store.Filter) ([]api.Object, error)
}

type storeReader struct{ s *store.Store }

func (r storeReader) List(k *api.Kind, f store.Filter) ([]api.Object, error) {
	objs, _, err := r.s.List(k, f)
	return objs, err
}

// eachDependent calls fn for every object, of any kind, that has an
// ownerReference to owner's UID.
func (c *Collector) eachDependent(r reader, ownerKind *api.Kind, owner api.Object, fn func(*api.Kind, api.Object) error) error {
	f := store.Filter{Index: store.IndexOwner, Value: string(owner.GetUID())}
	if ownerKind.Namespaced {
		f.Namespace = owner.GetNamespace()
	}
	for _, k := range api.AllKinds() { // custom resources may be dependents
		if !k.Namespaced && ownerKind.Namespaced {
			continue
		}
		objs, err := r.List(k, f)
		if err != nil {
			return fmt.Errorf("list %s owned by %s: %w", k.Resource, owner.GetUID(), err)
		}
		for _, d := range objs {
			if err := fn(k, d); err != nil {
				return err
			}
		}
	}
	return nil
}

package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var (
	serviceKind   = api.MustLookupResource("services")
	endpointsKind = api.MustLookupResource("endpoints")
	namespaceKind = api.MustLookupResource("namespaces")
)

// retryDelay is how long the follower waits before listing again after a
// watch failed for a reason other than having fallen behind.
const retryDelay = time.Second

// maxBatch bounds how many events one table update takes, so that a flood
// of changes still publishes regularly.
const maxBatch = 1024

// follower keeps a Table in step with the store's Services, Endpoints
// and Namespaces: it lists them from one snapshot, then watches them from
// that snapshot's revision, and lists again when a watch is lost. It is
// the table's only writer. A change rebuilds the entry of the one service
// it concerns, or the table's set of namespaces.
type follower struct {
	store *store.Store
	table *Table
	clock clock.WithTicker
	log   *slog.Logger

	// The objects the table was built from, by "namespace/name"; the
	// store's own objects, shared and never changed.
	services  map[string]*api.Service
	endpoints map[string]*api.Endpoints
	// namespaces are the names of the store's namespaces; nsDirty says
	// they changed since the table last had them.
	namespaces map[string]struct{}
	nsDirty    bool

	// beforeList, if set, runs before every listing: tests hold the
	// follower back with it to see the server before it has synced.
	beforeList func(ctx context.Context)
	// lists counts listings: one at start, one per lost watch.
	lists atomic.Int64
}

func newFollower(s *store.Store, t *Table, clk clock.WithTicker, log *slog.Logger) *follower {
	return &follower{
		store:      s,
		table:      t,
		clock:      clk,
		log:        log,
		services:   map[string]*api.Service{},
		endpoints:  map[string]*api.Endpoints{},
		namespaces: map[string]struct{}{},
	}
}

// run follows the store until ctx ends.
func (f *follower) run(ctx context.Context) {
	for {
		err := f.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, store.ErrGone) || errors.Is(err, store.ErrWatcherTooSlow) {
			f.log.Info("dns: watch lost, listing again", "err", err)
			continue
		}
		f.log.Error("dns: watch failed, listing again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-f.clock.After(retryDelay):
		}
	}
}

// listAndWatch reads both kinds from one snapshot into the table, marks it
// synced, and applies every later change until a watch fails.
func (f *follower) listAndWatch(ctx context.Context) error {
	if f.beforeList != nil {
		f.beforeList(ctx)
	}
	f.lists.Add(1)
	snap := f.store.Snapshot()
	services := map[string]*api.Service{}
	endpoints := map[string]*api.Endpoints{}
	err := snap.Each(serviceKind, store.Filter{}, func(o api.Object) bool {
		services[objectKey(o)] = o.(*api.Service)
		return true
	})
	if err != nil {
		return fmt.Errorf("dns: list services: %w", err)
	}
	err = snap.Each(endpointsKind, store.Filter{}, func(o api.Object) bool {
		endpoints[objectKey(o)] = o.(*api.Endpoints)
		return true
	})
	if err != nil {
		return fmt.Errorf("dns: list endpoints: %w", err)
	}
	namespaces := map[string]struct{}{}
	err = snap.Each(namespaceKind, store.Filter{}, func(o api.Object) bool {
		namespaces[o.GetName()] = struct{}{}
		return true
	})
	if err != nil {
		return fmt.Errorf("dns: list namespaces: %w", err)
	}
	f.nsDirty = f.nsDirty || !maps.Equal(namespaces, f.namespaces)
	f.namespaces = namespaces
	f.replace(services, endpoints)
	f.table.MarkSynced()

	wctx, cancel := context.WithCancel(ctx)
	events := make(chan store.Event, maxBatch)
	errc := make(chan error, 3)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait
	for _, k := range []*api.Kind{serviceKind, endpointsKind, namespaceKind} {
		w, err := f.store.Watch(wctx, store.WatchOptions{Kind: k, Revision: snap.Revision()})
		if err != nil {
			return fmt.Errorf("dns: watch %s: %w", k.Resource, err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				e, err := w.Next(wctx)
				if err != nil {
					errc <- fmt.Errorf("dns: watch %s: %w", k.Resource, err)
					return
				}
				select {
				case events <- e:
				case <-wctx.Done():
					return
				}
			}
		})
	}

	dirty := map[string]struct{}{}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			return err
		case e := <-events:
			f.record(e, dirty)
		drain:
			for len(dirty) < maxBatch {
				select {
				case e := <-events:
					f.record(e, dirty)
				default:
					break drain
				}
			}
			f.rebuild(dirty)
			clear(dirty)
		}
	}
}

// record notes one change in the follower's copy of the store.
func (f *follower) record(e store.Event, dirty map[string]struct{}) {
	if _, ok := e.Object.(*api.Namespace); ok {
		// Only a namespace's coming and going changes an answer; its
		// status, labels and finalizers do not.
		switch name := e.Object.GetName(); e.Type {
		case store.Added:
			f.namespaces[name] = struct{}{}
			f.nsDirty = true
		case store.Deleted:
			delete(f.namespaces, name)
			f.nsDirty = true
		}
		return
	}
	key := objectKey(e.Object)
	dirty[key] = struct{}{}
	switch o := e.Object.(type) {
	case *api.Service:
		if e.Type == store.Deleted {
			delete(f.services, key)
		} else {
			f.services[key] = o
		}
	case *api.Endpoints:
		if e.Type == store.Deleted {
			delete(f.endpoints, key)
		} else {
			f.endpoints[key] = o
		}
	}
}

// replace swaps the follower's copy for a fresh listing and rebuilds the
// services whose service or Endpoints changed (resourceVersion) or went.
func (f *follower) replace(services map[string]*api.Service, endpoints map[string]*api.Endpoints) {
	dirty := map[string]struct{}{}
	for key, svc := range services {
		if old := f.services[key]; old == nil || old.ResourceVersion != svc.ResourceVersion {
			dirty[key] = struct{}{}
		}
	}
	for key := range f.services {
		if services[key] == nil {
			dirty[key] = struct{}{}
		}
	}
	for key, ep := range endpoints {
		if old := f.endpoints[key]; old == nil || old.ResourceVersion != ep.ResourceVersion {
			dirty[key] = struct{}{}
		}
	}
	for key := range f.endpoints {
		if endpoints[key] == nil {
			dirty[key] = struct{}{}
		}
	}
	f.services, f.endpoints = services, endpoints
	f.rebuild(dirty)
}

// rebuild recomputes the entries of the given services and publishes them
// in one table update, and the namespaces if they changed.
func (f *follower) rebuild(dirty map[string]struct{}) {
	if f.nsDirty {
		f.table.SetNamespaces(slices.Collect(maps.Keys(f.namespaces)))
		f.nsDirty = false
	}
	changes := make([]change, 0, len(dirty))
	for key := range dirty {
		ns, name := splitKey(key)
		changes = append(changes, change{
			key:   serviceKey(ns, name),
			entry: buildEntry(f.table.zone, f.services[key], f.endpoints[key]),
		})
	}
	f.table.apply(changes)
}

func objectKey(o api.Object) string { return o.GetNamespace() + "/" + o.GetName() }

func splitKey(key string) (namespace, name string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

package ingress

import (
	"context"
	"fmt"
	"sync"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

// The kinds a routing table is built from.
var (
	ingressKind = api.MustLookupResource("ingresses")
	classKind   = api.MustLookupResource("ingressclasses")
	serviceKind = api.MustLookupResource("services")
	sliceKind   = api.MustLookupResource("endpointslices")
	secretKind  = api.MustLookupResource("secrets")
)

// follower keeps a copy of the five kinds from the shared informers and
// wakes the rebuilder when any of them changes.
type follower struct {
	informers *informer.Factory

	mu   sync.Mutex
	objs map[*api.Kind]map[string]api.Object
	wake chan struct{}
}

func newFollower(inf *informer.Factory) *follower {
	f := &follower{informers: inf, objs: map[*api.Kind]map[string]api.Object{}, wake: make(chan struct{}, 1)}
	for _, k := range []*api.Kind{ingressKind, classKind, serviceKind, sliceKind, secretKind} {
		f.objs[k] = map[string]api.Object{}
	}
	return f
}

// register starts the deliveries; remove ends them.
func (f *follower) register() (remove func(), err error) {
	var regs []informer.Registration
	for _, k := range []*api.Kind{ingressKind, classKind, serviceKind, sliceKind, secretKind} {
		regs = append(regs, informer.Registration{Kind: k, Handler: informer.Handler{
			List:  func(snap *store.Snapshot) error { return f.list(k, snap) },
			Event: f.record,
		}})
	}
	remove, err = f.informers.Register(regs...)
	if err != nil {
		return nil, fmt.Errorf("ingress: %w", err)
	}
	return remove, nil
}

func (f *follower) list(k *api.Kind, snap *store.Snapshot) error {
	objs, err := snap.List(k, store.Filter{})
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]api.Object, len(objs))
	for _, o := range objs {
		m[o.GetNamespace()+"/"+o.GetName()] = o
	}
	f.objs[k] = m
	f.signal()
	return nil
}

func (f *follower) record(e store.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.objs[e.Kind]
	if m == nil {
		return
	}
	key := e.Object.GetNamespace() + "/" + e.Object.GetName()
	if e.Type == store.Deleted {
		delete(m, key)
	} else {
		m[key] = e.Object
	}
	f.signal()
}

func (f *follower) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// objects copies out what the follower holds: the objects are the
// store's immutable ones, read only.
func (f *follower) objects() Objects {
	f.mu.Lock()
	defer f.mu.Unlock()
	var o Objects
	for _, x := range f.objs[ingressKind] {
		o.Ingresses = append(o.Ingresses, x.(*api.Ingress))
	}
	for _, x := range f.objs[classKind] {
		o.Classes = append(o.Classes, x.(*api.IngressClass))
	}
	for _, x := range f.objs[serviceKind] {
		o.Services = append(o.Services, x.(*api.Service))
	}
	for _, x := range f.objs[sliceKind] {
		o.EndpointSlices = append(o.EndpointSlices, x.(*api.EndpointSlice))
	}
	for _, x := range f.objs[secretKind] {
		o.Secrets = append(o.Secrets, x.(*api.Secret))
	}
	return o
}

// follow rebuilds the table at each change until ctx ends; set is given
// each new table.
func (f *follower) follow(ctx context.Context, set func(*Table)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
			set(Build(f.objects()))
		}
	}
}

package endpointslice

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/gc"
	"github.com/berth-dev/berth/reconcile/members/memberstest"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

// versions maps each managed slice of web to its uid and resourceVersion,
// to see which a reconcile wrote.
func versions(t *testing.T, s *store.Store) map[types.UID]string {
	t.Helper()
	out := map[types.UID]string{}
	for _, es := range managedSlices(t, s, "web") {
		out[es.UID] = es.ResourceVersion
	}
	return out
}

// written counts the slices a reconcile created, changed and deleted.
func written(before, after map[types.UID]string) (created, changed, deleted int) {
	for uid, rv := range after {
		switch old, ok := before[uid]; {
		case !ok:
			created++
		case old != rv:
			changed++
		}
	}
	for uid := range before {
		if _, ok := after[uid]; !ok {
			deleted++
		}
	}
	return created, changed, deleted
}

// update changes the stored object of a kind named name in default.
func update[T api.Object](t *testing.T, s *store.Store, k *api.Kind, name string, change func(T)) {
	t.Helper()
	obj, err := s.Get(k, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	o := obj.DeepCopyObject().(T)
	change(o)
	if _, err := s.Update(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

func updatePod(t *testing.T, s *store.Store, name string, change func(*api.Pod)) {
	t.Helper()
	update(t, s, podKind, name, change)
}

func updateService(t *testing.T, s *store.Store, change func(*api.Service)) {
	t.Helper()
	update(t, s, serviceKind, "web", change)
}

// deleteServiceAndWait deletes the service web and waits for its slices
// to go.
func deleteServiceAndWait(t *testing.T, s *store.Store) {
	t.Helper()
	if _, err := s.Delete(context.Background(), serviceKind, "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, waitTime, "the slices to go", func() error {
		if got := managedSlices(t, s, "web"); len(got) > 0 {
			return fmt.Errorf("%d slices left", len(got))
		}
		return nil
	})
}

// TestReconcileWritesLittle follows a service through changes and counts
// the slices each reconcile writes: a change of state rewrites the slice
// that holds the endpoint, in place; new endpoints fill a slice that has
// room; a change of ports reuses the slices.
func TestReconcileWritesLittle(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	create(t, s, memberstest.Service("web", web, memberstest.HTTPPort()))
	create(t, s, manyPods(150)...)
	r := NewReconciler(s)
	step := func(what string, wantCreated, wantChanged, wantDeleted int, change func()) {
		t.Helper()
		before := versions(t, s)
		change()
		if _, err := r.Reconcile(ctx, "default/web"); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		c, u, d := written(before, versions(t, s))
		if c != wantCreated || u != wantChanged || d != wantDeleted {
			t.Errorf("%s: created %d, changed %d, deleted %d slices; want %d, %d, %d", what, c, u, d, wantCreated, wantChanged, wantDeleted)
		}
	}
	step("first", 2, 0, 0, func() {})
	step("nothing changed", 0, 0, 0, func() {})
	step("a pod turns not ready", 0, 1, 0, func() { updatePod(t, s, "p007", memberstest.NotReady) })
	step("a pod is written for nothing", 0, 0, 0, func() {
		updatePod(t, s, "p007", func(p *api.Pod) { p.Status.Message = "hi" })
	})
	step("a pod comes", 0, 1, 0, func() { create(t, s, memberstest.Pod("new", "10.2.0.1")) })
	step("120 pods come: a whole new slice, the rest into the one with room", 1, 1, 0, func() {
		for i := range 120 {
			create(t, s, memberstest.Pod(fmt.Sprintf("q%03d", i), fmt.Sprintf("10.3.0.%d", i+1)))
		}
	})
	step("the ports change: every slice rewritten in place", 0, 3, 0, func() {
		updateService(t, s, func(svc *api.Service) { svc.Spec.Ports = append(svc.Spec.Ports, memberstest.MetricsPort()) })
	})
	if got := rows(managedSlices(t, s, "web")); len(got) != 271 {
		t.Errorf("%d endpoints, want 271", len(got))
	}
	for _, es := range managedSlices(t, s, "web") {
		if len(es.Endpoints) > MaxEndpointsPerSlice {
			t.Errorf("slice %s holds %d endpoints", es.Name, len(es.Endpoints))
		}
	}
	step("the selector goes: so do the slices", 0, 0, 3, func() {
		updateService(t, s, func(svc *api.Service) { svc.Spec.Selector = nil })
	})
}

// TestReconcileZones: an endpoint carries its node's zone.
func TestReconcileZones(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	create(t, s,
		&api.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{api.LabelTopologyZone: "zone-a"}}},
		memberstest.Service("web", web, memberstest.HTTPPort()), memberstest.Pod("a", "10.0.0.1"), memberstest.Pod("b", "10.0.0.2", memberstest.OnNode("node-2")))
	if _, err := NewReconciler(s).Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	zones := map[string]string{}
	for _, es := range managedSlices(t, s, "web") {
		for _, e := range es.Endpoints {
			zones[e.TargetRef.Name] = ptr.Deref(e.Zone, "")
		}
	}
	if want := map[string]string{"a": "zone-a", "b": ""}; fmt.Sprint(zones) != fmt.Sprint(want) {
		t.Errorf("zones %v, want %v", zones, want)
	}
}

// TestReconcileLeavesOthersSlices: slices a user wrote for a service
// without a selector, or that another controller manages, stay.
func TestReconcileLeavesOthersSlices(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	mine := &api.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-by-hand", Labels: map[string]string{api.LabelServiceName: "web"}},
		AddressType: api.AddressTypeIPv4,
		Endpoints:   []api.Endpoint{{Addresses: []string{"192.0.2.1"}}},
	}
	theirs := mine.DeepCopy()
	theirs.Name, theirs.Labels[api.LabelManagedBy] = "web-mesh", "mesh-controller"
	create(t, s, memberstest.Service("web", nil, memberstest.HTTPPort()), mine, theirs)
	r := NewReconciler(s)
	rev := s.Revision()
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if s.Revision() != rev {
		t.Errorf("the reconcile wrote")
	}
	updateService(t, s, func(svc *api.Service) { svc.Spec.Selector = web })
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-by-hand", "web-mesh"} {
		if _, err := s.Get(sliceKind, "default", name); err != nil {
			t.Errorf("slice %s: %v", name, err)
		}
	}
	if got := managedSlices(t, s, "web"); len(got) != 1 {
		t.Errorf("%d managed slices, want the placeholder", len(got))
	}
}

// TestReconcileSkipsSlicesBeingDeleted: a slice held by a finalizer after
// its deletion is left as it is, and its endpoints go into a live slice.
func TestReconcileSkipsSlicesBeingDeleted(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	create(t, s, memberstest.Service("web", web, memberstest.HTTPPort()), memberstest.Pod("a", "10.0.0.1"))
	r := NewReconciler(s)
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	first := managedSlices(t, s, "web")
	if len(first) != 1 {
		t.Fatalf("%d slices, want 1", len(first))
	}
	update(t, s, sliceKind, first[0].Name, func(es *api.EndpointSlice) { es.Finalizers = []string{"test/hold"} })
	if _, err := s.Delete(ctx, sliceKind, "default", first[0].Name, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	going, err := s.Get(sliceKind, "default", first[0].Name)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	var live []*api.EndpointSlice
	for _, es := range managedSlices(t, s, "web") {
		switch {
		case es.UID != going.GetUID():
			live = append(live, es)
		case es.ResourceVersion != going.GetResourceVersion():
			t.Errorf("the slice being deleted was written")
		}
	}
	if want := []row{{Type: api.AddressTypeIPv4, Ports: "http:8080/TCP", Address: "10.0.0.1", Pod: "a", Ready: true, Serving: true}}; fmt.Sprint(rows(live)) != fmt.Sprint(want) {
		t.Errorf("live slices hold %v, want %v", rows(live), want)
	}
}

// TestSlicesGoWithTheService: the slices name the service as their owner,
// so the garbage collector deletes them with it.
func TestSlicesGoWithTheService(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	create(t, s, memberstest.Service("web", web, memberstest.HTTPPort()), memberstest.Pod("a", "10.0.0.1"), memberstest.Pod("b", "fd00::2"))
	if _, err := NewReconciler(s).Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := managedSlices(t, s, "web"); len(got) != 2 {
		t.Fatalf("%d slices, want an IPv4 and an IPv6 one", len(got))
	}
	testtool.Run(t, "the garbage collector", func(ctx context.Context) error {
		return gc.NewController(s, gc.Options{}).Run(ctx, 1)
	})
	deleteServiceAndWait(t, s)
}

// TestWatchKeys: a pod that no service selects enqueues nothing, and a
// change to a managed slice enqueues its service.
func TestWatchKeys(t *testing.T) {
	r := NewReconciler(nil)
	watches := r.Watches()
	keys := func(k *api.Kind, e store.Event) []string {
		t.Helper()
		for _, w := range watches {
			if w.Kind == k {
				if w.Filter.Labels != nil && !w.Filter.Labels.Matches(labelSet(e.Object.GetLabels())) {
					return nil
				}
				return w.Keys(e)
			}
		}
		t.Fatalf("no watch of %s", k)
		return nil
	}
	p := memberstest.Pod("a", "10.0.0.1")
	if got := keys(podKind, store.Event{Type: store.Added, Object: p}); got != nil {
		t.Errorf("a pod with no service: keys %v", got)
	}
	keys(serviceKind, store.Event{Type: store.Added, Object: memberstest.Service("web", web)})
	if got := keys(podKind, store.Event{Type: store.Added, Object: p}); !slices.Equal(got, []string{"default/web"}) {
		t.Errorf("a selected pod: keys %v", got)
	}
	es := &api.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-x",
		Labels: map[string]string{api.LabelServiceName: "web", api.LabelManagedBy: ManagedBy}}}
	if got := keys(sliceKind, store.Event{Type: store.Deleted, Object: es}); !slices.Equal(got, []string{"default/web"}) {
		t.Errorf("a managed slice: keys %v", got)
	}
	es.Labels[api.LabelManagedBy] = "someone"
	if got := keys(sliceKind, store.Event{Type: store.Deleted, Object: es}); got != nil {
		t.Errorf("someone else's slice: keys %v", got)
	}
}

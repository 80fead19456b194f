package members

import (
	"slices"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/members/memberstest"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

var serviceKind = api.MustLookupResource("services")

// TestServiceIndexKeepsTheNewerSelector: a reconcile that read its
// snapshot before its service changed, and observes the service after the
// Service watch recorded the change, does not put the older selector
// back, so a pod that only the newer one selects still finds the service.
func TestServiceIndexKeepsTheNewerSelector(t *testing.T) {
	ctx := t.Context()
	s := storetest.NewMemory(t)
	created, err := s.Create(ctx, memberstest.Service("web", map[string]string{"app": "v1"}, memberstest.HTTPPort()))
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, store.WatchOptions{Kind: serviceKind, Revision: s.Revision()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	x := NewIndex()

	// A reconcile takes its snapshot; the service then moves to v2 and
	// the watch records it; the reconcile observes what it read.
	stale := s.Snapshot()
	moved := created.DeepCopyObject().(*api.Service)
	moved.Spec.Selector = map[string]string{"app": "v2"}
	if _, err := s.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	e, err := w.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	x.ServiceKeys(e)
	old, err := stale.Get(serviceKind, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	x.Observe("default/web", old.(*api.Service), stale.Revision())

	v2 := store.Event{Type: store.Added, Object: memberstest.Pod("a", "10.0.0.1", memberstest.Labelled("app", "v2"))}
	if got := x.PodKeys(v2); !slices.Equal(got, []string{"default/web"}) {
		t.Errorf("a pod of v2 after the older observation: keys %v, want [default/web]", got)
	}
	v1 := store.Event{Type: store.Added, Object: memberstest.Pod("b", "10.0.0.2", memberstest.Labelled("app", "v1"))}
	if got := x.PodKeys(v1); got != nil {
		t.Errorf("a pod of v1 after the older observation: keys %v, want none", got)
	}

	// A newer observation is heard: the service is gone.
	if _, err := s.Delete(ctx, serviceKind, "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	x.Observe("default/web", nil, s.Snapshot().Revision())
	if got := x.PodKeys(v2); got != nil {
		t.Errorf("after the service went: keys %v, want none", got)
	}
}

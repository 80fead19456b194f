package endpoints

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/members/memberstest"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

// TestControllerFollowsPods runs the controller on a real store and follows
// a pod through not ready, ready, relabelled, and the service's deletion.
func TestControllerFollowsPods(t *testing.T) {
	s := storetest.NewMemory(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	// A service and a pod that exist before the controller starts.
	if _, err := s.Create(ctx, memberstest.Service("web", map[string]string{"app": "web"}, memberstest.HTTPPort())); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, memberstest.Pod("a", "10.0.0.1", memberstest.NotReady)); err != nil {
		t.Fatal(err)
	}
	c := NewController(s, Options{})
	wg.Go(func() {
		if err := c.Run(ctx, 2); err != nil {
			t.Error(err)
		}
	})

	endpoints := func() *api.Endpoints {
		obj, err := s.Get(endpointsKind, "default", "web")
		if err != nil {
			return nil
		}
		return obj.(*api.Endpoints)
	}
	ready := func(ep *api.Endpoints) []string {
		var ips []string
		for _, ss := range ep.Subsets {
			for _, a := range ss.Addresses {
				ips = append(ips, a.IP)
			}
		}
		return ips
	}
	waitFor(t, 5*time.Second, "a not-ready address", func() bool {
		ep := endpoints()
		return ep != nil && len(ep.Subsets) == 1 && len(ep.Subsets[0].NotReadyAddresses) == 1
	})

	// The pod turns ready: the address moves, within about a second.
	start := time.Now()
	obj, _ := s.Get(podKind, "default", "a")
	p := obj.DeepCopyObject().(*api.Pod)
	p.Status.Conditions[0].Status = api.ConditionTrue
	if _, err := s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the pod to be a ready address", func() bool {
		ep := endpoints()
		return ep != nil && len(ready(ep)) == 1
	})
	t.Logf("pod ready → endpoints in %v", time.Since(start))

	// A second pod appears ready.
	if _, err := s.Create(ctx, memberstest.Pod("b", "10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "two ready addresses", func() bool {
		ep := endpoints()
		return ep != nil && len(ready(ep)) == 2
	})

	// An irrelevant pod write does not rewrite the Endpoints.
	rv := endpoints().ResourceVersion
	before := c.Stats().Reconciles
	obj, _ = s.Get(podKind, "default", "b")
	p = obj.DeepCopyObject().(*api.Pod)
	p.Status.Message = "still fine"
	if _, err := s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Relabel pod a away from the service: its address goes.
	obj, _ = s.Get(podKind, "default", "a")
	p = obj.DeepCopyObject().(*api.Pod)
	p.Labels = map[string]string{"app": "other"}
	if _, err := s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "one ready address", func() bool {
		ep := endpoints()
		return ep != nil && len(ready(ep)) == 1 && ready(ep)[0] == "10.0.0.2"
	})
	if ep := endpoints(); ep.ResourceVersion == rv {
		t.Errorf("endpoints not rewritten after relabel")
	}
	t.Logf("reconciles for the two pod writes: %d", c.Stats().Reconciles-before)

	// Someone deletes the managed Endpoints: it comes back.
	if _, err := s.Delete(ctx, endpointsKind, "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the Endpoints to be restored", func() bool { return endpoints() != nil })

	// The service goes: so does its Endpoints.
	if _, err := s.Delete(ctx, serviceKind, "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the Endpoints to go", func() bool { return endpoints() == nil })
}

package endpointslice

import (
	"context"
	"fmt"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/members/memberstest"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

// TestControllerFollowsPods runs the controller on a real store and follows
// a pod through not ready and ready, a slice deleted and one edited by
// someone else, and the service's deletion.
func TestControllerFollowsPods(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	create(t, s, memberstest.Service("web", web, memberstest.HTTPPort()), memberstest.Pod("a", "10.0.0.1", memberstest.NotReady))
	c := NewController(s, Options{})
	testtool.Run(t, "the controller", func(ctx context.Context) error { return c.Run(ctx, 2) })

	// ready waits until the service's slices list these ready endpoints.
	ready := func(what string, want ...string) {
		t.Helper()
		testtool.WaitFor(t, waitTime, what, func() error {
			if got := readyEndpoints(s, managedSlices(t, s, "web")); fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("ready %v", got)
			}
			return nil
		})
	}
	testtool.WaitFor(t, waitTime, "a not-ready endpoint", func() error {
		if got := rows(managedSlices(t, s, "web")); len(got) != 1 || got[0].Ready {
			return fmt.Errorf("endpoints %v", got)
		}
		return nil
	})
	updatePod(t, s, "a", func(p *api.Pod) { p.Status.Conditions[0].Status = api.ConditionTrue })
	ready("the pod to be ready", "10.0.0.1:8080")
	create(t, s, memberstest.Pod("b", "10.0.0.2"))
	ready("a second endpoint", "10.0.0.1:8080", "10.0.0.2:8080")

	// Someone deletes the slice: it comes back.
	es := managedSlices(t, s, "web")[0]
	if _, err := s.Delete(ctx, sliceKind, "default", es.Name, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ready("the slice to be made again", "10.0.0.1:8080", "10.0.0.2:8080")

	// Someone empties it: the endpoints come back.
	es = managedSlices(t, s, "web")[0].DeepCopy()
	es.Endpoints = es.Endpoints[:1]
	if _, err := s.Update(ctx, es); err != nil {
		t.Fatal(err)
	}
	ready("the edit to be undone", "10.0.0.1:8080", "10.0.0.2:8080")

	// The service goes: so do its slices.
	deleteServiceAndWait(t, s)
}

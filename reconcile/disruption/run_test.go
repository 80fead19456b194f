package disruption

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// TestControllerFollowsPodsAndScale runs the controller on a real store:
// a pod turning ready and a Deployment scaling each bring its budget's
// status up to date, through the watches alone.
func TestControllerFollowsPodsAndScale(t *testing.T) {
	f := newFixture(t)
	ref := f.deployment("web", 2)
	f.pod("web-a", ref, true)
	f.pod("web-b", ref, false)
	f.budget(api.PodDisruptionBudgetSpec{MaxUnavailable: count(intstr.FromInt32(1))})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	c := NewController(f.store, Options{Clock: f.clock})
	wg.Go(func() {
		if err := c.Run(ctx, 1); err != nil {
			t.Error(err)
		}
	})
	counted := func(allowed, healthy, desired, expected int32) func() error {
		return func() error {
			s := f.get().Status
			if s.DisruptionsAllowed != allowed || s.CurrentHealthy != healthy || s.DesiredHealthy != desired || s.ExpectedPods != expected {
				return fmt.Errorf("status %+v", s)
			}
			return nil
		}
	}
	testtool.WaitFor(t, 10*time.Second, "the budget counted", counted(0, 1, 1, 2))

	o, err := f.store.Get(podKind, "shop", "web-b")
	if err != nil {
		t.Fatal(err)
	}
	p := o.(*api.Pod).DeepCopy()
	p.Status.Conditions[0].Status = api.ConditionTrue
	if _, err := f.store.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "the ready pod counted", counted(1, 2, 1, 2))

	o, err = f.store.Get(deploymentKind, "shop", "web")
	if err != nil {
		t.Fatal(err)
	}
	d := o.(*api.Deployment).DeepCopy()
	four := int32(4)
	d.Spec.Replicas = &four
	if _, err := f.store.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "the scale counted", counted(0, 2, 3, 4))
	if s := c.Stats(); s.Errors != 0 {
		t.Fatalf("reconcile errors: %+v", s)
	}
}

package podgc

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

type fixture struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	store *store.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	s, err := store.New(store.Memory{}, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &fixture{t: t, clock: clk, store: s}
}

func (f *fixture) create(obj api.Object) {
	f.t.Helper()
	if _, err := f.store.Create(context.Background(), obj); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) node(name string) {
	f.create(&api.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// pod creates a pod now; the fake clock orders creation times.
func (f *fixture) pod(name string, phase api.PodPhase, node string) {
	f.t.Helper()
	f.create(&api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       api.PodSpec{NodeName: node, Containers: []api.Container{{Name: "c", Image: "i"}}},
		Status:     api.PodStatus{Phase: phase},
	})
	f.clock.Step(time.Second)
}

func (f *fixture) pods() []string {
	f.t.Helper()
	objs, _, err := f.store.List(podKind, store.Filter{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

// TestCollectorKeepsThresholdAndRemovesOrphans calls passes by hand on a
// fake clock over a real store.
func TestCollectorKeepsThresholdAndRemovesOrphans(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	for i := range 5 {
		f.pod(fmt.Sprintf("done-%d", i), api.PodSucceeded, "n1")
	}
	f.pod("running", api.PodRunning, "n1")
	f.pod("orphan", api.PodRunning, "gone")
	f.pod("early", api.PodRunning, "late")
	f.pod("unbound", api.PodPending, "")
	// A terminating pod of a node that is gone: its agent will never
	// confirm it stopped.
	f.pod("stuck", api.PodRunning, "gone")
	f.node("gone")
	if _, err := f.store.Delete(context.Background(), podKind, "default", "stuck", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Delete(context.Background(), nodeKind, "", "gone", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if slices.Index(f.pods(), "stuck") < 0 {
		t.Fatal("pod stuck was deleted at once; the test needs it terminating")
	}

	c := NewCollector(f.store, Options{Threshold: 3, Clock: f.clock})
	pass := func() {
		t.Helper()
		if _, err := c.Reconcile(context.Background(), passKey); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	want := []string{"done-2", "done-3", "done-4", "early", "orphan", "running", "stuck", "unbound"}
	if got := f.pods(); !slices.Equal(got, want) {
		t.Fatalf("after the first pass: %v, want %v", got, want)
	}

	f.clock.Step(39 * time.Second)
	f.node("late")
	pass()
	if got := f.pods(); !slices.Equal(got, want) {
		t.Fatalf("within the quarantine: %v, want %v", got, want)
	}

	f.clock.Step(time.Second)
	pass()
	want = []string{"done-2", "done-3", "done-4", "early", "running", "unbound"}
	if got := f.pods(); !slices.Equal(got, want) {
		t.Fatalf("after the quarantine: %v, want %v", got, want)
	}
}

// TestControllerRunsEveryPeriod runs the controller on its fake clock.
func TestControllerRunsEveryPeriod(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	c := NewController(f.store, Options{Threshold: 1, Clock: f.clock})
	wg.Go(func() {
		if err := c.Run(ctx, 1); err != nil {
			t.Error(err)
		}
	})
	testtool.WaitFor(t, 10*time.Second, "the first pass", func() error {
		if c.Stats().Reconciles == 0 {
			return fmt.Errorf("no pass yet")
		}
		return nil
	})
	f.pod("old", api.PodFailed, "n1")
	f.pod("new", api.PodSucceeded, "n1")
	testtool.WaitFor(t, 10*time.Second, "the older finished pod deleted", func() error {
		f.clock.Step(time.Second)
		if got := f.pods(); !slices.Equal(got, []string{"new"}) {
			return fmt.Errorf("pods %v", got)
		}
		return nil
	})
}

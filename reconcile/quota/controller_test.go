package quota

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

func TestReconcileRecounts(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	r := NewReconciler(s)
	for i := range 3 {
		mustCreate(t, s, podIn("team", fmt.Sprint("p", i), container("main", rl("cpu", "100m"), nil)))
	}
	mustCreate(t, s, claim("team", "data", "1Gi"))
	mustCreate(t, s, newQuota("team", "compute", rl("pods", "10", "requests.cpu", "2")))
	mustCreate(t, s, newQuota("team", "storage", rl("requests.storage", "5Gi")))
	mustCreate(t, s, newQuota("team", "none", nil))
	mustCreate(t, s, newQuota("other", "compute", rl("pods", "10")))
	if _, err := r.Reconcile(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "compute"); got != "pods=3 requests.cpu=300m" {
		t.Errorf("compute used %q", got)
	}
	if got := used(t, s, "team", "storage"); got != "requests.storage=1Gi" {
		t.Errorf("storage used %q", got)
	}
	if got := used(t, s, "other", "compute"); got != "" {
		t.Errorf("a quota of another namespace was written: %q", got)
	}
	obj, _ := s.Get(quotaKind, "team", "compute")
	if got := show(obj.(*api.ResourceQuota).Status.Hard); got != "pods=10 requests.cpu=2" {
		t.Errorf("status.hard %q", got)
	}

	// A second pass changes nothing.
	rev := s.Revision()
	if _, err := r.Reconcile(ctx, "team"); err != nil || s.Revision() != rev {
		t.Fatalf("a converged namespace was written: %v, revision %d → %d", err, rev, s.Revision())
	}

	// Deletes lower what is used.
	for i := range 2 {
		if _, err := s.Delete(ctx, podKind, "team", fmt.Sprint("p", i), store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Reconcile(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "compute"); got != "pods=1 requests.cpu=100m" {
		t.Errorf("compute used %q after deletes", got)
	}
	// A namespace without quota, or gone, is nothing to do.
	if _, err := r.Reconcile(ctx, "nope"); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileCorrectsHookedStore checks that the recount also puts
// right a status written by hand in a store with the hook.
func TestReconcileCorrectsHookedStore(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	mustCreate(t, s, newQuota("team", "compute", rl("pods", "5")))
	mustCreate(t, s, podIn("team", "a"))
	obj, _ := s.Get(quotaKind, "team", "compute")
	wrong := obj.(*api.ResourceQuota).DeepCopy()
	wrong.Status.Used = rl("pods", "4")
	if _, err := s.Update(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "compute"); got != "pods=4" {
		t.Fatalf("used %q, want the status as written", got)
	}
	if _, err := NewReconciler(s).Reconcile(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "compute"); got != "pods=1" {
		t.Fatalf("used %q after the recount", got)
	}
}

func TestControllerKeepsUsed(t *testing.T) {
	s := storetest.NewMemory(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := NewController(s, Options{})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	t.Cleanup(func() { cancel(); <-done })

	usedIs := func(want string) func() error {
		return func() error {
			obj, err := s.Get(quotaKind, "team", "objects")
			if err != nil {
				return err
			}
			if got := show(obj.(*api.ResourceQuota).Status.Used); got != want {
				return fmt.Errorf("used %q, want %q", got, want)
			}
			return nil
		}
	}
	mustCreate(t, s, podIn("team", "a"))
	mustCreate(t, s, podIn("team", "b"))
	mustCreate(t, s, &api.Service{ObjectMeta: podIn("team", "web").ObjectMeta})
	mustCreate(t, s, newQuota("team", "objects", rl("pods", "5")))
	testtool.WaitFor(t, 10*time.Second, "quota counted", usedIs("pods=2"))
	obj, _ := s.Get(quotaKind, "team", "objects")
	more := obj.(*api.ResourceQuota).DeepCopy()
	more.Spec.Hard["services"] = resource.MustParse("2")
	if _, err := s.Update(ctx, more); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "a new limit counted", usedIs("pods=2 services=1"))
	if _, err := s.Delete(ctx, podKind, "team", "a", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "delete counted", usedIs("pods=1 services=1"))
	obj, _ = s.Get(podKind, "team", "b")
	finished := obj.(*api.Pod).DeepCopy()
	finished.Status.Phase = api.PodFailed
	if _, err := s.Update(ctx, finished); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "finished pod freed", usedIs("pods=0 services=1"))
}

// TestControllerResyncs checks that a status written by hand, which no
// watch reports, is recounted at the next resync.
func TestControllerResyncs(t *testing.T) {
	s := newStore(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	c := NewController(s, Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	t.Cleanup(func() { cancel(); <-done })

	mustCreate(t, s, newQuota("team", "compute", rl("pods", "5")))
	mustCreate(t, s, podIn("team", "a"))
	obj, _ := s.Get(quotaKind, "team", "compute")
	wrong := obj.(*api.ResourceQuota).DeepCopy()
	wrong.Status.Used = rl("pods", "4")
	if _, err := s.Update(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "the resync's recount", func() error {
		clk.Step(DefaultResyncPeriod)
		if got := used(t, s, "team", "compute"); got != "pods=1" {
			return fmt.Errorf("used %q", got)
		}
		return nil
	})
}

func TestWatchKeys(t *testing.T) {
	p := podIn("team", "a")
	running := p.DeepCopy()
	running.Status.Phase = api.PodRunning
	finished := p.DeepCopy()
	finished.Status.Phase = api.PodSucceeded
	q := newQuota("team", "compute", rl("pods", "1"))
	charged := q.DeepCopy()
	charged.Status.Used = rl("pods", "1")
	raised := q.DeepCopy()
	raised.Spec.Hard = rl("pods", "2")
	tests := []struct {
		name string
		keys func(store.Event) []string
		e    store.Event
		want bool
	}{
		{"pod added", usageFreed, store.Event{Type: store.Added, Object: p}, false},
		{"pod status only", usageFreed, store.Event{Type: store.Modified, Object: running, Old: p}, false},
		{"pod finished", usageFreed, store.Event{Type: store.Modified, Object: finished, Old: running}, true},
		{"pod deleted", usageFreed, store.Event{Type: store.Deleted, Object: p, Old: p}, true},
		{"quota added", limitsChanged, store.Event{Type: store.Added, Object: q}, true},
		{"quota charged", limitsChanged, store.Event{Type: store.Modified, Object: charged, Old: q}, false},
		{"quota limits changed", limitsChanged, store.Event{Type: store.Modified, Object: raised, Old: q}, true},
		{"quota deleted", limitsChanged, store.Event{Type: store.Deleted, Object: q, Old: q}, false},
	}
	for _, tt := range tests {
		got := tt.keys(tt.e)
		if tt.want != (len(got) == 1 && got[0] == "team") || !tt.want && len(got) != 0 {
			t.Errorf("%s: keys %v", tt.name, got)
		}
	}
}

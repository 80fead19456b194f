package event

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newStore(t *testing.T, clk *clocktesting.FakeClock) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func pod(name string) *api.Pod {
	return &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
}

// record writes one event through Record in its own transaction.
func record(t *testing.T, s *store.Store, r *Recorder, obj api.Object, typ, reason, msg string) {
	t.Helper()
	if _, err := s.Txn(context.Background(), func(tx *store.Txn) error {
		return r.Record(tx, obj, typ, reason, msg)
	}); err != nil {
		t.Fatal(err)
	}
}

// events lists the stored events, oldest first.
func events(t *testing.T, s *store.Store) []*api.Event {
	t.Helper()
	objs, _, err := s.List(eventKind, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*api.Event, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Event)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func TestRepeatWithinWindowBumpsCount(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	s := newStore(t, clk)
	r := NewWriter(s, Options{Clock: clk}).Recorder("test-controller", "")
	p := pod("web-1")

	for range 3 {
		record(t, s, r, p, api.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		clk.Step(time.Minute)
	}
	evs := events(t, s)
	if len(evs) != 1 {
		t.Fatalf("got %d events, want 1 correlated one", len(evs))
	}
	ev := evs[0]
	if ev.Count != 3 {
		t.Errorf("count = %d, want 3", ev.Count)
	}
	if !ev.FirstTimestamp.Time.Equal(t0) {
		t.Errorf("firstTimestamp = %v, want %v (kept)", ev.FirstTimestamp, t0)
	}
	if want := t0.Add(2 * time.Minute); !ev.LastTimestamp.Time.Equal(want) {
		t.Errorf("lastTimestamp = %v, want %v (moved)", ev.LastTimestamp, want)
	}
	if want := fmt.Sprintf("web-1.%x", t0.UnixNano()); ev.Name != want {
		t.Errorf("name = %q, want %q", ev.Name, want)
	}
	if ev.Namespace != "default" || ev.InvolvedObject.Kind != "Pod" || ev.InvolvedObject.Name != "web-1" ||
		ev.InvolvedObject.UID != "uid-web-1" || ev.Source.Component != "test-controller" || ev.Type != api.EventTypeWarning {
		t.Errorf("event = %+v", ev)
	}
}

func TestWhatStartsANewEvent(t *testing.T) {
	cases := []struct {
		name   string
		second func(r *Recorder, other *Recorder) (*Recorder, api.Object, string, string, string)
		wait   time.Duration
		want   int
	}{
		{"same everything", func(r, _ *Recorder) (*Recorder, api.Object, string, string, string) {
			return r, pod("a"), api.EventTypeNormal, "Started", "Started container app"
		}, time.Minute, 1},
		{"different message", func(r, _ *Recorder) (*Recorder, api.Object, string, string, string) {
			return r, pod("a"), api.EventTypeNormal, "Started", "Started container sidecar"
		}, time.Minute, 2},
		{"different reason", func(r, _ *Recorder) (*Recorder, api.Object, string, string, string) {
			return r, pod("a"), api.EventTypeNormal, "Created", "Started container app"
		}, time.Minute, 2},
		{"different type", func(r, _ *Recorder) (*Recorder, api.Object, string, string, string) {
			return r, pod("a"), api.EventTypeWarning, "Started", "Started container app"
		}, time.Minute, 2},
		{"different object", func(r, _ *Recorder) (*Recorder, api.Object, string, string, string) {
			return r, pod("b"), api.EventTypeNormal, "Started", "Started container app"
		}, time.Minute, 2},
		{"different component", func(_, o *Recorder) (*Recorder, api.Object, string, string, string) {
			return o, pod("a"), api.EventTypeNormal, "Started", "Started container app"
		}, time.Minute, 2},
		{"after the window", func(r, _ *Recorder) (*Recorder, api.Object, string, string, string) {
			return r, pod("a"), api.EventTypeNormal, "Started", "Started container app"
		}, DefaultWindow, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			s := newStore(t, clk)
			w := NewWriter(s, Options{Clock: clk})
			r, other := w.Recorder("one", ""), w.Recorder("two", "")
			record(t, s, r, pod("a"), api.EventTypeNormal, "Started", "Started container app")
			clk.Step(tc.wait)
			rr, obj, typ, reason, msg := tc.second(r, other)
			record(t, s, rr, obj, typ, reason, msg)
			evs := events(t, s)
			if len(evs) != tc.want {
				t.Fatalf("got %d events, want %d", len(evs), tc.want)
			}
			for _, ev := range evs {
				if ev.Count != int32(3-tc.want) {
					t.Errorf("%s count = %d, want %d", ev.Name, ev.Count, 3-tc.want)
				}
			}
		})
	}
}

func TestRateLimitPerObject(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	s := newStore(t, clk)
	w := NewWriter(s, Options{Clock: clk, Burst: 3, Refill: time.Minute})
	r := w.Recorder("test", "")
	for i := range 5 {
		record(t, s, r, pod("a"), api.EventTypeNormal, "Step", fmt.Sprint("step ", i))
	}
	if n := len(events(t, s)); n != 3 {
		t.Fatalf("after 5 events at once got %d, want the burst of 3", n)
	}
	if got := counterValue(t, w.limited); got != 2 {
		t.Errorf("rate limited = %v, want 2", got)
	}
	// Another object has its own bucket.
	record(t, s, r, pod("b"), api.EventTypeNormal, "Step", "step 0")
	if n := len(events(t, s)); n != 4 {
		t.Fatalf("another object's event: got %d events, want 4", n)
	}
	// A repeat costs a token too.
	record(t, s, r, pod("a"), api.EventTypeNormal, "Step", "step 0")
	if n, c := len(events(t, s)), events(t, s)[0].Count; n != 4 || c != 1 {
		t.Fatalf("a repeat over the limit was written: %d events, count %d", n, c)
	}
	// One token comes back per refill period.
	clk.Step(time.Minute)
	record(t, s, r, pod("a"), api.EventTypeNormal, "Step", "step 5")
	record(t, s, r, pod("a"), api.EventTypeNormal, "Step", "step 6")
	if n := len(events(t, s)); n != 5 {
		t.Fatalf("after one refill period got %d events, want 5", n)
	}
}

func TestFullQueueDropsWithoutBlocking(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	s := newStore(t, clk)
	w := NewWriter(s, Options{Clock: clk, QueueSize: 2})
	r := w.Recorder("test", "")
	// No writer runs: the queue fills and the rest are dropped at once.
	for i := range 5 {
		r.Eventf(pod("a"), api.EventTypeNormal, "Step", "step %d", i)
	}
	if got := counterValue(t, w.dropped); got != 3 {
		t.Fatalf("dropped = %v, want 3", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	testtool.WaitFor(t, 5*time.Second, "the queued events", func() error {
		if n := len(events(t, s)); n != 2 {
			return fmt.Errorf("%d events", n)
		}
		return nil
	})
	evs := events(t, s)
	if evs[0].Message != "step 0" || evs[1].Message != "step 1" {
		t.Errorf("written %q, %q; want the first two", evs[0].Message, evs[1].Message)
	}
}

func TestRunWritesQueuedEventsAndFlushesAtStop(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	s := newStore(t, clk)
	w := NewWriter(s, Options{Clock: clk})
	r := w.Recorder("scheduler", "")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"}}
	r.Event(node, api.EventTypeNormal, "NodeReady", "Node n1 status is now: NodeReady")
	testtool.WaitFor(t, 5*time.Second, "the node's event", func() error {
		if n := len(events(t, s)); n != 1 {
			return fmt.Errorf("%d events", n)
		}
		return nil
	})
	ev := events(t, s)[0]
	if ev.Namespace != api.NamespaceDefault || ev.InvolvedObject.Namespace != "" || ev.InvolvedObject.Kind != "Node" {
		t.Errorf("a node's event: namespace %q, involved %+v", ev.Namespace, ev.InvolvedObject)
	}
	if !regexp.MustCompile(`^n1\.[0-9a-f]+$`).MatchString(ev.Name) {
		t.Errorf("name %q is not <name>.<hex>", ev.Name)
	}
	// Events queued when Run is told to stop are still written.
	cancel()
	for i := range 10 {
		r.Eventf(pod("a"), api.EventTypeNormal, "Step", "step %d", i)
	}
	wg.Wait()
	w.flush(context.Background(), nil) // whatever raced past Run's last drain
	if n := len(events(t, s)); n != 11 {
		t.Errorf("after stop: %d events, want 11", n)
	}
}

// An event Record cannot store because its namespace is being deleted
// is dropped, and the change it reports commits.
func TestRecordDropsAnEventOfATerminatingNamespace(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	refuse := func(_ *store.Txn, k *api.Kind, obj, old api.Object) error {
		if k == eventKind && old == nil && obj != nil {
			return &store.ObjectError{Err: store.ErrNamespaceTerminating, Kind: k, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		}
		return nil
	}
	s, err := store.New(store.Memory{}, store.Options{Clock: clk, Admit: []store.AdmitFunc{refuse}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r := NewWriter(s, Options{Clock: clk}).Recorder("test", "")
	if _, err := s.Txn(context.Background(), func(tx *store.Txn) error {
		if _, err := tx.Create(pod("a")); err != nil {
			return err
		}
		return r.Record(tx, pod("a"), api.EventTypeNormal, "Made", "a pod")
	}); err != nil {
		t.Fatalf("the change with its refused event: %v", err)
	}
	if _, err := s.Get(api.KindOf(&api.Pod{}), "default", "a"); err != nil {
		t.Errorf("the change did not commit: %v", err)
	}
	if evs := events(t, s); len(evs) != 0 {
		t.Errorf("events %v", evs)
	}
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.Event(pod("a"), api.EventTypeNormal, "X", "y")
	r.Eventf(pod("a"), api.EventTypeNormal, "X", "%s", "y")
	if err := r.Record(nil, pod("a"), api.EventTypeNormal, "X", "y"); err != nil {
		t.Fatal(err)
	}
}

func TestLRUForgetsTheLeastRecentlyUsed(t *testing.T) {
	c := newLRU[string, int](2)
	c.put("a", 1)
	c.put("b", 2)
	c.get("a")
	c.put("c", 3)
	if _, ok := c.get("b"); ok {
		t.Error("b kept, want it forgotten")
	}
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Error("a forgotten")
	}
	if c.len() != 2 {
		t.Errorf("len = %d", c.len())
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

func next(t *testing.T, w *Watcher) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := w.Next(ctx)
	if err != nil {
		t.Fatalf("next event: %v", err)
	}
	return e
}

// expectNone checks that no event is queued. Events are queued before the
// write that made them returns, so there is nothing to wait for.
func expectNone(t *testing.T, w *Watcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if e, err := w.Next(ctx); err == nil {
		t.Fatalf("unexpected event %s %s rev %d", e.Type, e.Object.GetName(), e.Revision)
	}
}

// watchPods watches every pod from now until the test ends.
func watchPods(t *testing.T, s *Store) *Watcher {
	t.Helper()
	w, err := s.Watch(context.Background(), WatchOptions{Kind: podKind})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// TestWatchQueueReuse delivers events read and written in uneven turns,
// so that the watcher's queue moves its undelivered events to the front,
// grows, drains and starts again: none is lost, repeated or reordered.
func TestWatchQueueReuse(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	w := watchPods(t, s)
	want := uint64(2)
	read := func(n int) {
		t.Helper()
		for range n {
			if e := next(t, w); e.Revision != want {
				t.Fatalf("event of revision %d, want %d", e.Revision, want)
			}
			want++
		}
	}
	written := 0
	write := func(n int) {
		for range n {
			if _, err := s.Create(ctx, pod("default", fmt.Sprintf("p%d", written), "")); err != nil {
				t.Fatal(err)
			}
			written++
		}
	}
	for round := range 40 {
		write(3 + round%5)
		read(1 + round%3)
		if round%10 == 9 {
			read(int(uint64(written+2) - want)) // drain
		}
	}
	read(int(uint64(written+2) - want))
	expectNone(t, w)
	if written < 100 {
		t.Fatalf("only %d writes", written)
	}
}

func TestWatchDeliversInOrder(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	w := watchPods(t, s)
	p, _ := s.Create(ctx, pod("default", "a", ""))
	up := p.DeepCopyObject().(*api.Pod)
	up.Labels["v"] = "2"
	s.Update(ctx, up)
	s.Delete(ctx, podKind, "default", "a", DeleteOptions{})
	s.Create(ctx, &api.ConfigMap{})
	for i, want := range []EventType{Added, Modified, Deleted} {
		e := next(t, w)
		if e.Type != want || e.Revision != uint64(i+2) || e.Object.GetResourceVersion() != fmt.Sprint(i+2) {
			t.Fatalf("event %d: %s rev %d rv %s, want %s rev %d", i, e.Type, e.Revision, e.Object.GetResourceVersion(), want, i+2)
		}
	}
	expectNone(t, w)
	if rev, ok := w.Bookmark(); !ok || rev != 4 {
		t.Fatalf("bookmark %d %v", rev, ok)
	}
}

func TestWatchFromRevisionReplays(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for i := range 5 {
		s.Create(ctx, pod("default", fmt.Sprintf("p%d", i), ""))
	}
	w, err := s.Watch(ctx, WatchOptions{Kind: podKind, Revision: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range []string{"p3", "p4"} {
		if e := next(t, w); e.Object.GetName() != want {
			t.Fatalf("replayed %s, want %s", e.Object.GetName(), want)
		}
	}
	expectNone(t, w)
	if _, err := s.Watch(ctx, WatchOptions{Kind: podKind, Revision: 99}); !errors.Is(err, ErrFutureRevision) {
		t.Fatalf("future revision: %v", err)
	}
}

func TestWatchGoneAfterCompaction(t *testing.T) {
	s, err := New(Memory{}, Options{History: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range 10 {
		s.Create(ctx, pod("default", fmt.Sprintf("p%d", i), ""))
	}
	if _, err := s.Watch(ctx, WatchOptions{Kind: podKind, Revision: 2}); !IsGone(err) {
		t.Fatalf("watch from a compacted revision: %v", err)
	}
	w, err := s.Watch(ctx, WatchOptions{Kind: podKind, Revision: 7})
	if err != nil {
		t.Fatalf("watch within history: %v", err)
	}
	defer w.Stop()
	if e := next(t, w); e.Revision != 8 {
		t.Fatalf("first replayed revision %d", e.Revision)
	}
}

func TestWatchByNodeSeesOnlyItsPods(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	w1, _ := s.Watch(ctx, WatchOptions{Kind: podKind, Filter: Filter{Index: IndexNode, Value: "n1"}})
	defer w1.Stop()
	w2, _ := s.Watch(ctx, WatchOptions{Kind: podKind, Filter: Filter{Index: IndexNode, Value: "n2"}})
	defer w2.Stop()
	pending, _ := s.Watch(ctx, WatchOptions{Kind: podKind, Filter: Filter{Index: IndexNode, Value: ""}})
	defer pending.Stop()

	p, _ := s.Create(ctx, pod("default", "a", ""))
	if e := next(t, pending); e.Type != Added {
		t.Fatalf("pending watcher got %s", e.Type)
	}
	expectNone(t, w1)

	// Binding moves the pod from the pending watch to the node's watch.
	bound := p.DeepCopyObject().(*api.Pod)
	bound.Spec.NodeName = "n1"
	s.Update(ctx, bound)
	if e := next(t, w1); e.Type != Added || e.Object.(*api.Pod).Spec.NodeName != "n1" {
		t.Fatalf("n1 watcher got %s", e.Type)
	}
	if e := next(t, pending); e.Type != Deleted {
		t.Fatalf("pending watcher got %s on bind, want DELETED", e.Type)
	}
	expectNone(t, w2)

	s.Create(ctx, pod("default", "b", "n2"))
	if e := next(t, w2); e.Object.GetName() != "b" {
		t.Fatalf("n2 watcher got %s", e.Object.GetName())
	}
	expectNone(t, w1)
}

func TestWatchLabelTransitions(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	w, _ := s.Watch(ctx, WatchOptions{Kind: podKind, Filter: Filter{Labels: labels.SelectorFromSet(labels.Set{"tier": "web"})}})
	defer w.Stop()
	p, _ := s.Create(ctx, pod("default", "a", ""))
	expectNone(t, w)
	on := p.DeepCopyObject().(*api.Pod)
	on.Labels["tier"] = "web"
	on2, _ := s.Update(ctx, on)
	if e := next(t, w); e.Type != Added {
		t.Fatalf("got %s, want ADDED when the pod starts matching", e.Type)
	}
	off := on2.DeepCopyObject().(*api.Pod)
	delete(off.Labels, "tier")
	s.Update(ctx, off)
	e := next(t, w)
	if e.Type != Deleted || e.Object.GetResourceVersion() != "4" {
		t.Fatalf("got %s rv %s, want DELETED at rv 4 when the pod stops matching", e.Type, e.Object.GetResourceVersion())
	}
}

func TestSlowWatcherIsStopped(t *testing.T) {
	s, err := New(Memory{}, Options{WatcherQueue: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	w, _ := s.Watch(ctx, WatchOptions{Kind: podKind})
	for i := range 5 {
		s.Create(ctx, pod("default", fmt.Sprintf("p%d", i), ""))
	}
	for range 3 {
		next(t, w)
	}
	if _, err := w.Next(ctx); !errors.Is(err, ErrWatcherTooSlow) {
		t.Fatalf("slow watcher: %v", err)
	}
}

func TestWatchEndsWithContextAndClose(t *testing.T) {
	s, err := New(Memory{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, _ := s.Watch(ctx, WatchOptions{Kind: podKind})
	cancel()
	if _, err := w.Next(context.Background()); err == nil {
		t.Fatal("watch outlived its context")
	}
	w2, _ := s.Watch(context.Background(), WatchOptions{Kind: podKind})
	s.Close()
	if _, err := w2.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("watch after close: %v", err)
	}
}

// TestWatchConcurrentBursts: a watcher that reads in fits and starts while
// writes come in bursts (its queue grows, moves its events to the front,
// drains and is let go) gets every event once, in order.
func TestWatchConcurrentBursts(t *testing.T) {
	s := newStore(t)
	w := watchPods(t, s)
	const writes = 3000
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for i := 0; i < writes; {
			burst := 1 + i%300
			_, err := s.Txn(ctx, func(tx *Txn) error {
				for j := 0; j < burst && i+j < writes; j++ {
					if _, err := tx.Create(pod("default", fmt.Sprintf("p%d", i+j), "")); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				done <- err
				return
			}
			i += burst
		}
		done <- nil
	}()
	seen := 0
	var last uint64
	names := map[string]bool{}
	for seen < writes {
		e := next(t, w)
		if e.Revision < last {
			t.Fatalf("event of revision %d after %d", e.Revision, last)
		}
		if names[e.Object.GetName()] {
			t.Fatalf("%s delivered twice", e.Object.GetName())
		}
		names[e.Object.GetName()] = true
		last = e.Revision
		seen++
		if seen%97 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	expectNone(t, w)
}

// TestWatchFromPublishedRevision: a store publishes a commit to readers
// before it hands its events to watchers, so a watch from the revision
// a reader was just given can arrive in between. It starts there, and
// the events up to that revision, still on their way, are not delivered
// (a lister has them already); a revision not yet published is still in
// the future.
func TestWatchFromPublishedRevision(t *testing.T) {
	h := newHub(5, 16, 100)
	ctx := context.Background()
	w, err := h.watch(ctx, WatchOptions{Kind: podKind, Revision: 7}, 7)
	if err != nil {
		t.Fatalf("watch from the published revision 7, dispatched 5: %v", err)
	}
	defer w.Stop()
	if _, err := h.watch(ctx, WatchOptions{Kind: podKind, Revision: 8}, 7); !errors.Is(err, ErrFutureRevision) {
		t.Fatalf("revision 8, published 7: %v, want ErrFutureRevision", err)
	}
	var batches []*batch
	for rev := uint64(6); rev <= 8; rev++ {
		p := pod("default", fmt.Sprintf("p%d", rev), "")
		batches = append(batches, &batch{rev: rev, events: []Event{{Type: Added, Revision: rev, Kind: podKind, Object: p}}})
	}
	h.dispatch(batches)
	if e := next(t, w); e.Revision != 8 {
		t.Fatalf("first event at revision %d, want 8", e.Revision)
	}
	expectNone(t, w)
	if rev, ok := w.Bookmark(); !ok || rev != 8 {
		t.Errorf("bookmark %d %v, want 8", rev, ok)
	}
}

package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// diskBackend keeps what it commits, and fails every write, probes
// included, while full is set, as a full disk does; a failed commit
// writes nothing.
type diskBackend struct {
	full atomic.Bool

	mu      sync.Mutex
	rev     uint64
	objects map[string]bool
	probes  int
}

func (d *diskBackend) Load(func(api.Object) error) (uint64, error) { return 0, nil }
func (d *diskBackend) Close() error                                { return nil }

func (d *diskBackend) Commit(rev uint64, ops []Op) error {
	if d.full.Load() {
		return syscall.ENOSPC
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if rev <= d.rev {
		return errors.New("revision went back")
	}
	d.rev = rev
	for _, op := range ops {
		d.objects[op.Namespace+"/"+op.Name] = op.Object != nil
	}
	return nil
}

func (d *diskBackend) Probe() error {
	d.mu.Lock()
	d.probes++
	d.mu.Unlock()
	if d.full.Load() {
		return syscall.ENOSPC
	}
	return nil
}

// TestFullDiskRecovers fills the disk under a store: the write that
// fails and those after it are refused, and Err says so, until the disk
// has room again; then, with no restart, after a back-off on the store's
// clock, writes are taken again from the last durable revision, and
// nothing refused is seen.
func TestFullDiskRecovers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	d := &diskBackend{objects: map[string]bool{}}
	s, err := New(d, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Create(ctx, pod("default", "before", "")); err != nil {
		t.Fatal(err)
	}
	durable := s.Revision()

	d.full.Store(true)
	if _, err := s.Create(ctx, pod("default", "lost", "")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write to a full disk: %v", err)
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "retrying") {
		t.Fatalf("Err while the disk is full: %v", err)
	}
	if _, err := s.Create(ctx, pod("default", "refused", "")); err == nil {
		t.Fatal("a write was taken while the store cannot write")
	}
	// Probes go on failing while the disk is full.
	testtool.WaitFor(t, 10*time.Second, "a probe of the full disk", func() error {
		clk.Step(time.Minute)
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.probes < 2 {
			return errors.New("not probed twice")
		}
		return nil
	})
	if s.Err() == nil {
		t.Fatal("the store says it writes while the disk is full")
	}

	d.full.Store(false)
	testtool.WaitFor(t, 10*time.Second, "the store to write again", func() error {
		clk.Step(time.Minute)
		return s.Err()
	})
	if got := s.Revision(); got != durable {
		t.Fatalf("revision %d after recovery, want the last durable one, %d", got, durable)
	}
	obj, err := s.Create(ctx, pod("default", "after", ""))
	if err != nil {
		t.Fatalf("write after the disk has room: %v", err)
	}
	if obj.GetResourceVersion() != "3" {
		t.Errorf("the first write after recovery got resourceVersion %s, want 3 (the next after %d)", obj.GetResourceVersion(), durable)
	}
	for name, want := range map[string]bool{"before": true, "lost": false, "refused": false, "after": true} {
		_, err := s.Get(podKind, "default", name)
		if got := err == nil; got != want {
			t.Errorf("pod %s visible: %v, want %v (%v)", name, got, want, err)
		}
		d.mu.Lock()
		stored := d.objects["default/"+name]
		d.mu.Unlock()
		if stored != want {
			t.Errorf("pod %s in the backend: %v, want %v", name, stored, want)
		}
	}
	// A second fill and free recovers as the first did.
	d.full.Store(true)
	if _, err := s.Create(ctx, pod("default", "lost-2", "")); err == nil {
		t.Fatal("write to a full disk taken")
	}
	d.full.Store(false)
	testtool.WaitFor(t, 10*time.Second, "the store to write again", func() error {
		clk.Step(time.Minute)
		return s.Err()
	})
	if _, err := s.Create(ctx, pod("default", "after-2", "")); err != nil {
		t.Fatal(err)
	}
}

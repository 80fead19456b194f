package dir

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/testtool"
)

func realClock() clock.WithTicker { return clock.RealClock{} }

func sourceSpec(root string) source.Spec {
	return source.Spec{Name: "bench", Type: source.TypeDir, URL: root, Interval: source.DefaultDirInterval}
}

// harness runs a Dir source on a fake clock.
type harness struct {
	t   *testing.T
	clk *clocktesting.FakeClock
	src *Dir
	out chan source.Revision
}

func start(t *testing.T, path string, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, clk: clocktesting.NewFakeClock(time.Unix(1000, 0)), out: make(chan source.Revision)}
	if opts.Clock == nil {
		opts.Clock = h.clk
	}
	spec := source.Spec{Name: "test", Type: source.TypeDir, URL: path, Interval: 20 * time.Second}
	src, err := New(spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.src = src
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, h.out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return h
}

func (h *harness) receive() source.Revision {
	h.t.Helper()
	select {
	case r := <-h.out:
		return r
	case <-time.After(10 * time.Second):
		h.t.Fatal("no revision within 10s")
		return source.Revision{}
	}
}

// settle lets the quiet period pass each time the watch has seen a change
// (a debounce timer beside the relist timer) until a revision comes. A
// change seen just as the quiet period ends starts it again, so one step
// may not be enough.
func (h *harness) settle() source.Revision {
	h.t.Helper()
	var r source.Revision
	testtool.WaitFor(h.t, 10*time.Second, "a revision", func() error {
		select {
		case r = <-h.out:
			return nil
		default:
		}
		if h.clk.Waiters() >= 2 {
			h.clk.Step(DefaultDebounce + time.Millisecond)
		}
		return errors.New("none sent yet")
	})
	return r
}

package testtool

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestNeedFindsAProgramOnPath(t *testing.T) {
	// sh is on every machine these tests run on.
	if p := Need(t, "sh"); p == "" {
		t.Fatal("no path for sh")
	}
}

func TestNeedSkipsWhenMissing(t *testing.T) {
	t.Setenv(RequireEnv, "")
	var skipped bool
	t.Run("missing", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Need(t, "berth-no-such-tool")
	})
	if !skipped {
		t.Fatal("a missing tool did not skip the test")
	}
}

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	WaitFor(t, 5*time.Second, "three calls", func() error {
		if n++; n < 3 {
			return fmt.Errorf("call %d", n)
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("condition called %d times, want 3", n)
	}
}

// deafWriter answers only its third line, as a process attached to late
// would hear only what comes after.
type deafWriter struct {
	out   *Buffer
	lines int
}

func (w *deafWriter) Write(p []byte) (int, error) {
	if w.lines++; w.lines == 3 {
		fmt.Fprintf(w.out, "heard %s", p)
	}
	return len(p), nil
}

func TestSayUntilSaysUntilHeard(t *testing.T) {
	var out Buffer
	w := &deafWriter{out: &out}
	SayUntil(t, 5*time.Second, w, "hello\n", &out, "heard hello")
	if w.lines != 3 {
		t.Fatalf("said it %d times, want 3", w.lines)
	}
}

// Run's function runs until its test ends, and is cancelled and waited for
// then.
func TestRunStopsAtCleanup(t *testing.T) {
	started, stopped := make(chan struct{}), make(chan struct{})
	t.Run("inner", func(t *testing.T) {
		Run(t, "loop", func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			close(stopped)
			return nil
		})
		<-started
		select {
		case <-stopped:
			t.Fatal("stopped before the test ended")
		default:
		}
	})
	select {
	case <-stopped:
	default:
		t.Fatal("still running after the test ended")
	}
}

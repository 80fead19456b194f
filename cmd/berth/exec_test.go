package main

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestTerminalSizes: the size of the terminal goes first, then each new
// one after the terminal is resized, and Next ends with the exec.
func TestTerminalSizes(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	s := newTerminalSizes(t.Context(), int(tty.Fd()))
	if sz := s.Next(); sz == nil || sz.Width != 80 || sz.Height != 24 {
		t.Fatalf("first size %+v, want 80x24", sz)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 132}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	got := make(chan *struct{ w, h uint16 }, 1)
	go func() {
		sz := s.Next()
		if sz == nil {
			got <- nil
			return
		}
		got <- &struct{ w, h uint16 }{sz.Width, sz.Height}
	}()
	select {
	case sz := <-got:
		if sz == nil || sz.w != 132 || sz.h != 50 {
			t.Fatalf("after the resize %+v, want 132x50", sz)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no size after the resize")
	}
	s.stop()
	if sz := s.Next(); sz != nil {
		t.Errorf("Next after stop = %+v, want nil", sz)
	}
}

package main

import (
	"os"
	"strings"
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

// As kubectl's: -t gives a terminal only with -i on input that is one;
// -t alone gives none, silently, and -it on a pipe none, with a warning.
// Without a terminal stderr comes back on its own.
func TestExecTerminalNeedsInput(t *testing.T) {
	for _, tt := range []struct {
		flags string
		stdin bool
		warn  bool
	}{
		{"-t", false, false},
		{"-it", true, true},
		{"-i", true, false},
	} {
		f := cluster()
		useFakeAPI(t, f)
		r := runBerth(t, "input", "exec", tt.flags, "web-7d4b9c-abcde", "--", "sh")
		if r.code != exitOK || len(f.execs) != 1 {
			t.Fatalf("%s: exit %d, %d execs; stderr %s", tt.flags, r.code, len(f.execs), r.stderr)
		}
		opts := f.execs[0]
		if opts.TTY || opts.Stderr == nil || (opts.Stdin != nil) != tt.stdin {
			t.Errorf("%s: tty %v, stderr %v, stdin %v", tt.flags, opts.TTY, opts.Stderr != nil, opts.Stdin != nil)
		}
		if warned := strings.Contains(r.stderr, "Unable to use a TTY"); warned != tt.warn {
			t.Errorf("%s: warned %v: %q", tt.flags, warned, r.stderr)
		}
	}
}

// As kubectl's: in a pod of several containers, exec without -c runs in
// the default one and says which; with -c, in that one, silently.
func TestExecDefaultContainer(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		container string
		said      string
	}{
		{[]string{"exec", "cache-0", "--", "sh"}, "redis", "Defaulted container \"redis\" out of: redis, exporter, wait-db (init), seed (init)\n"},
		{[]string{"exec", "cache-0", "-c", "exporter", "--", "sh"}, "exporter", ""},
		{[]string{"exec", "web-7d4b9c-abcde", "--", "sh"}, "web", ""},
	} {
		f := cluster()
		useFakeAPI(t, f)
		r := runBerth(t, "", tt.args...)
		if r.code != exitOK || len(f.execs) != 1 {
			t.Fatalf("%v: exit %d, %d execs; stderr %s", tt.args, r.code, len(f.execs), r.stderr)
		}
		if got := f.execs[0].Container; got != tt.container || r.stderr != tt.said {
			t.Errorf("%v: container %q, stderr %q; want %q, %q", tt.args, got, r.stderr, tt.container, tt.said)
		}
	}
}

//go:build linux

package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/testtool"
)

// attachIn attaches to id in a goroutine; the error comes on the channel.
func attachIn(r *Runtime, ctx context.Context, id runtime.ID, opts runtime.AttachOptions) <-chan error {
	done := make(chan error, 1)
	go func() { done <- r.Attach(ctx, id, opts) }()
	return done
}

// TestAttachPipes: sessions write to a container's stdin and get its
// stdout and stderr apart, from the time they attach; a session's input
// ending ends that session only, the container's input staying open for
// the others; the container's end ends every session.
func TestAttachPipes(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-attach", Name: "c"}
	c := sh(id, `echo before; while read line; do echo "out $line"; echo "err $line" >&2; done; echo input-closed`)
	c.Stdin = true
	start(t, r, c)
	waitLog(t, r, id, "before")
	ctx := context.Background()

	inR, inW := io.Pipe()
	var outA, errA testtool.Buffer
	doneA := attachIn(r, ctx, id, runtime.AttachOptions{Stdin: inR, Stdout: &outA, Stderr: &errA})
	testtool.SayUntil(t, waitLong, inW, "one\n", &outA, "out one")
	testtool.WaitFor(t, waitLong, "stderr apart", func() error {
		if !strings.Contains(errA.String(), "err one") || strings.Contains(outA.String(), "err") || strings.Contains(errA.String(), "out") {
			return fmt.Errorf("stdout %q, stderr %q", outA.String(), errA.String())
		}
		return nil
	})
	if strings.Contains(outA.String(), "before") {
		t.Errorf("a session got output from before it attached: %q", outA.String())
	}

	// A second session, output only, hears what the first one says.
	var outB testtool.Buffer
	ctxB, cancelB := context.WithCancel(ctx)
	defer cancelB()
	doneB := attachIn(r, ctxB, id, runtime.AttachOptions{Stdout: &outB})
	testtool.SayUntil(t, waitLong, inW, "two\n", &outB, "out two")

	// The first session's input ends: it is over, the container's
	// input is not.
	inW.Close()
	waitDone(t, doneA, "the session whose input ended did not end")
	inR2, inW2 := io.Pipe()
	defer inW2.Close()
	var outC testtool.Buffer
	doneC := attachIn(r, ctx, id, runtime.AttachOptions{Stdin: inR2, Stdout: &outC})
	testtool.SayUntil(t, waitLong, inW2, "three\n", &outB, "out three")
	if strings.Contains(outB.String(), "input-closed") {
		t.Fatalf("the container's input was closed: %q", outB.String())
	}

	// The container ends: so does every session, with nil.
	if err := r.Stop(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	waitDone(t, doneB, "the output-only session did not end with the container")
	waitDone(t, doneC, "the writing session did not end with the container")
	if log := logs(t, r, id, runtime.LogOptions{}); !strings.Contains(log, "before\n") || !strings.Contains(log, "out one\n") || !strings.Contains(log, "err one\n") {
		t.Errorf("the log lost output: %q", log)
	}
	if err := r.Attach(ctx, id, runtime.AttachOptions{Stdout: io.Discard}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("attach to an ended run: %v", err)
	}
}

// TestAttachStdinOnce: with StdinOnce the first writing session's end of
// input closes the container's, which reads its end and exits; the
// session gets all its output until then. A session that leaves without
// ending its input closes it as well.
func TestAttachStdinOnce(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	ctx := context.Background()
	for _, leave := range []bool{false, true} {
		id := runtime.ID{PodUID: "pod-stdin-once", Name: fmt.Sprintf("leave-%t", leave)}
		c := sh(id, `cat; echo "input closed"`)
		c.Stdin, c.StdinOnce = true, true
		start(t, r, c)
		var out testtool.Buffer
		if !leave {
			err := r.Attach(ctx, id, runtime.AttachOptions{Stdin: strings.NewReader("hello\n"), Stdout: &out})
			if err != nil || out.String() != "hello\ninput closed\n" {
				t.Errorf("attach with input = %q, %v; want the input back and the end", out.String(), err)
			}
		} else {
			inR, inW := io.Pipe()
			ctxA, cancel := context.WithCancel(ctx)
			done := attachIn(r, ctxA, id, runtime.AttachOptions{Stdin: inR, Stdout: &out})
			testtool.SayUntil(t, waitLong, inW, "hi\n", &out, "hi")
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("a session that left: %v", err)
			}
			inW.Close()
		}
		if s := waitExited(t, r, id); s.ExitCode != 0 {
			t.Errorf("%s: %+v, want the container done with its input", id, s)
		}
		if log := logs(t, r, id, runtime.LogOptions{}); !strings.HasSuffix(log, "input closed\n") {
			t.Errorf("%s: log %q", id, log)
		}
	}
}

// TestAttachTerminal: a TTY container runs on a terminal of its own,
// controlling it, its output one stream (in the log too); a session
// sizes it, and with StdinOnce its end of input is the terminal's end of
// file.
func TestAttachTerminal(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	ctx := context.Background()
	id := runtime.ID{PodUID: "pod-tty", Name: "c"}
	c := sh(id, `while read line; do stty size; [ -t 0 ] && [ -t 1 ] && echo "tty $TERM $line"; echo "to-stderr $line" >&2; done; echo "end of file"`)
	c.Stdin, c.StdinOnce, c.TTY = true, true, true
	start(t, r, c)

	resize := make(chan runtime.TerminalSize, 1)
	resize <- runtime.TerminalSize{Width: 100, Height: 40}
	inR, inW := io.Pipe()
	var out testtool.Buffer
	done := attachIn(r, ctx, id, runtime.AttachOptions{Stdin: inR, Stdout: &out, Stderr: io.Discard, Resize: resize})
	testtool.SayUntil(t, waitLong, inW, "go\n", &out, "40 100")
	// The rest of the loop that printed the size comes after it.
	testtool.WaitFor(t, waitLong, "the terminal's one output", func() error {
		after := out.String()[strings.Index(out.String(), "40 100"):]
		for _, want := range []string{"tty xterm go", "to-stderr go"} {
			if !strings.Contains(after, want) {
				return fmt.Errorf("terminal output %q lacks %q", out.String(), want)
			}
		}
		return nil
	})
	resize <- runtime.TerminalSize{Width: 120, Height: 50}
	testtool.SayUntil(t, waitLong, inW, "again\n", &out, "50 120")
	inW.Close()
	waitDone(t, done, "the terminal's session did not end with the container")
	if !strings.Contains(out.String(), "end of file") {
		t.Errorf("the terminal got no end of file: %q", out.String())
	}
	if s := waitExited(t, r, id); s.ExitCode != 0 {
		t.Errorf("exited %+v", s)
	}
	if log := logs(t, r, id, runtime.LogOptions{}); !strings.Contains(log, "to-stderr go") || !strings.Contains(log, "end of file") {
		t.Errorf("the log lacks the terminal's output: %q", log)
	}
}

// TestAttachAdopted: a runtime that adopted a run (the agent restarted)
// attaches to it through the shim's socket, which only the agent's user
// may use, at a run directory too deep for a socket address.
func TestAttachAdopted(t *testing.T) {
	root := t.TempDir()
	r1, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	id := runtime.ID{PodUID: strings.Repeat("u", 36), Name: strings.Repeat("n", 63)}
	if dir := runDir(root, id); len(dir) < 108 {
		t.Fatalf("the run directory %q fits a socket address; make it longer", dir)
	}
	c := sh(id, `while read line; do echo "got $line"; done`)
	c.Stdin = true
	start(t, r1, c)
	r1.Close()

	fi, err := os.Stat(filepath.Join(runDir(root, id), attachSocket))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Errorf("attach socket: %v, uid %d; want a socket of mode 0600 owned by %d", fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid, os.Getuid())
	}

	r2 := newRuntime(t, root)
	inR, inW := io.Pipe()
	defer inW.Close()
	var out testtool.Buffer
	done := attachIn(r2, context.Background(), id, runtime.AttachOptions{Stdin: inR, Stdout: &out})
	testtool.SayUntil(t, waitLong, inW, "hello\n", &out, "got hello")
	if err := r2.Stop(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done, "the session did not end with the adopted container")
	if _, err := os.Stat(filepath.Join(runDir(root, id), attachSocket)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ended shim left its socket: %v", err)
	}
}

// blockedWriter blocks every write until release is closed.
type blockedWriter struct {
	release chan struct{}
	n       int
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	<-w.release
	w.n += len(p)
	return len(p), nil
}

// TestAttachSlowSession: a session that does not read holds nothing up:
// the container writes on to its end and to the log, and the session is
// ended, saying it fell behind. The container lives on after its output,
// so that the shim is still there to say so once the session reads
// again (a shim whose container ended waits only sessionDrain for the
// sessions).
func TestAttachSlowSession(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-slow", Name: "c"}
	// More than the session's queue and the socket's buffers hold.
	const size = 12 << 20
	c := sh(id, fmt.Sprintf(`read go; head -c %d /dev/zero; echo; echo finished; sleep 600`, size))
	c.Stdin = true
	start(t, r, c)
	out := &blockedWriter{release: make(chan struct{})}
	// Input kept open: its end would end the session.
	inR, inW := io.Pipe()
	defer inW.Close()
	done := attachIn(r, context.Background(), id, runtime.AttachOptions{Stdin: inR, Stdout: out})
	go io.WriteString(inW, "go\n")
	waitLog(t, r, id, "finished")
	close(out.release)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "fell behind") {
			t.Errorf("the slow session ended with %v, after %d bytes; want it told it fell behind", err, out.n)
		}
	case <-time.After(waitLong):
		t.Fatal("the slow session did not end")
	}
	if log := logs(t, r, id, runtime.LogOptions{TailLines: 1}); log != "finished\n" {
		t.Errorf("the log ends %q", log)
	}
	if err := r.Stop(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	waitExited(t, r, id)
}

// TestAttachWithoutStdin: the input of a session to a container without
// stdin goes nowhere, and its end ends nothing: the container reads
// /dev/null as ever.
func TestAttachWithoutStdin(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-no-stdin", Name: "c"}
	gate := filepath.Join(t.TempDir(), "gate")
	start(t, r, sh(id, fmt.Sprintf(`read x; echo "read $? $x"; while [ ! -e %s ]; do echo waiting; sleep 0.02; done; echo done`, gate)))
	waitLog(t, r, id, "read 1")
	var out testtool.Buffer
	done := attachIn(r, context.Background(), id, runtime.AttachOptions{Stdin: strings.NewReader("ignored\n"), Stdout: &out})
	testtool.WaitFor(t, waitLong, "output after the session's input ended", func() error {
		if !strings.Contains(out.String(), "waiting") {
			return fmt.Errorf("output %q", out.String())
		}
		return nil
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done, "the session did not end with the container")
	if got := out.String(); !strings.HasSuffix(got, "done\n") || strings.Contains(got, "ignored") {
		t.Errorf("session output %q", got)
	}
}

// FuzzAttachFrames: whatever the socket carries, reading frames neither
// panics nor takes more than a frame's bound, and what appendFrame wrote
// reads back.
func FuzzAttachFrames(f *testing.F) {
	f.Add([]byte{frameHello, 0, 0, 0, 1, attachStdin})
	f.Add(appendFrame(appendFrame(nil, frameStdin, []byte("hi\n")), frameResize, resizePayload(80, 24)))
	f.Add([]byte{frameStdout, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{frameEnd, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		buf := make([]byte, 16)
		for {
			typ, p, err := readFrame(r, buf)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errFrameTooLarge) {
					t.Fatalf("error %v", err)
				}
				break
			}
			if len(p) > maxFrame {
				t.Fatalf("a frame of %d bytes", len(p))
			}
			if typ == frameResize {
				parseResize(p)
			}
			back, q, err := readFrame(bytes.NewReader(appendFrame(nil, typ, p)), nil)
			if err != nil || back != typ || !bytes.Equal(q, p) {
				t.Fatalf("frame %q %q read back as %q %q, %v", typ, p, back, q, err)
			}
		}
	})
}

// TestAttachWithoutShim: a container whose shim died, or whose shim was
// of an agent before attach, is refused with why, not as not running.
func TestAttachWithoutShim(t *testing.T) {
	root := t.TempDir()
	r1, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	id := runtime.ID{PodUID: "pod-no-shim", Name: "c"}
	// It writes nothing: with its shim gone, a write would end it.
	s := start(t, r1, sh(id, "while :; do sleep 0.05; done"))
	r1.Close()
	var st runState
	if err := readJSON(filepath.Join(runDir(root, id), stateFile), &st); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.ShimPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The shim is this process's child: reaped here, it leaves no
	// zombie.
	if _, err := syscall.Wait4(st.ShimPID, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	r2 := newRuntime(t, root)
	if got, err := r2.Status(context.Background(), id); err != nil || got.State != runtime.StateRunning || got.PID != s.PID {
		t.Fatalf("adopted %+v, %v; want the container running", got, err)
	}
	if err := r2.Attach(context.Background(), id, runtime.AttachOptions{Stdout: io.Discard}); !errors.Is(err, errShimGone) {
		t.Errorf("attach without its shim: %v", err)
	}
	if err := os.Remove(filepath.Join(runDir(root, id), attachSocket)); err != nil {
		t.Fatal(err)
	}
	if err := r2.Attach(context.Background(), id, runtime.AttachOptions{Stdout: io.Discard}); !errors.Is(err, errNoAttach) {
		t.Errorf("attach to a shim without a socket: %v", err)
	}
	if err := r2.Stop(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
}

// TestAttachStdinOnceUnblocksStuckInput: with StdinOnce, a session's end
// of input closes the container's even while another session's input is
// stuck on a container that does not read it: the stuck write ends with
// the close, rather than the close waiting for the container to read.
func TestAttachStdinOnceUnblocksStuckInput(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id := runtime.ID{PodUID: "pod-stuck-input", Name: "c"}
	c := sh(id, "while :; do sleep 0.05; done")
	c.Stdin, c.StdinOnce = true, true
	s := start(t, r, c)

	// The container's stdin, opened again here to watch it: full, and
	// then closed by the shim (no writer left).
	in, err := os.OpenFile("/proc/"+strconv.Itoa(s.PID)+"/fd/0", os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	size, err := unix.FcntlInt(in.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	// More than the pipe and the socket between runtime and shim hold.
	flood := attachIn(r, ctx, id, runtime.AttachOptions{Stdin: bytes.NewReader(make([]byte, 16<<20)), Stdout: io.Discard})
	testtool.WaitFor(t, waitLong, "the container's input full", func() error {
		n, err := unix.IoctlGetInt(int(in.Fd()), unix.TIOCINQ)
		if err != nil || n < size {
			return fmt.Errorf("%d of %d bytes, %v", n, size, err)
		}
		return nil
	})
	ended := attachIn(r, ctx, id, runtime.AttachOptions{Stdin: strings.NewReader(""), Stdout: io.Discard})
	testtool.WaitFor(t, waitLong, "the container's input closed", func() error {
		fds := []unix.PollFd{{Fd: int32(in.Fd()), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, 0); err != nil {
			return err
		}
		if fds[0].Revents&unix.POLLHUP == 0 {
			return errors.New("a writer still holds it")
		}
		return nil
	})
	in.Close()
	if err := r.Stop(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	waitDone(t, flood, "the flooding session did not end with the container")
	waitDone(t, ended, "the session whose input ended did not end with the container")
}

// TestOutputInOrderWithoutStdin: a container without stdin writes stdout
// and stderr to one pipe, as it did before attach: its log holds what it
// wrote to either in the order it wrote it, and a session attached gets
// both as stdout. Two pipes, read at once, would lose that order.
func TestOutputInOrderWithoutStdin(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-order", Name: "c"}
	gate := filepath.Join(t.TempDir(), "gate")
	start(t, r, sh(id, fmt.Sprintf(`[ "$(readlink /proc/$$/fd/1)" = "$(readlink /proc/$$/fd/2)" ] && echo one-pipe
while [ ! -e %s ]; do echo waiting; sleep 0.02; done
for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done`, gate)))
	var want strings.Builder
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&want, "out%d\nerr%d\n", i, i)
	}
	var out, errOut testtool.Buffer
	done := attachIn(r, context.Background(), id, runtime.AttachOptions{Stdout: &out, Stderr: &errOut})
	testtool.WaitFor(t, waitLong, "the session attached", func() error {
		if !strings.Contains(out.String(), "waiting") {
			return fmt.Errorf("output %q", out.String())
		}
		return nil
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done, "the session did not end with the container")
	if s := waitExited(t, r, id); s.ExitCode != 0 {
		t.Fatalf("exited %+v", s)
	}
	if log := logs(t, r, id, runtime.LogOptions{}); !strings.HasPrefix(log, "one-pipe\n") || !strings.HasSuffix(log, "waiting\n"+want.String()) {
		t.Errorf("log %q, want one pipe and the lines in the order written, ending %q", log, want.String())
	}
	if !strings.HasSuffix(out.String(), want.String()) || errOut.String() != "" {
		t.Errorf("session stdout %q, stderr %q; want all of it on stdout, in order", out.String(), errOut.String())
	}
}

// TestAttachAsTheShimEnds: between the container's exit and its shim's
// (which waits a little for sessions still taking output), an attach is
// told the container does not run, not that its shim died.
func TestAttachAsTheShimEnds(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-shim-ending", Name: "c"}
	// More than the session's queue and the socket's buffers hold, so
	// that the session below holds its shim up.
	c := sh(id, fmt.Sprintf(`read go; head -c %d /dev/zero`, 12<<20))
	c.Stdin = true
	start(t, r, c)
	out := &blockedWriter{release: make(chan struct{})}
	inR, inW := io.Pipe()
	defer inW.Close()
	slow := attachIn(r, context.Background(), id, runtime.AttachOptions{Stdin: inR, Stdout: out})
	go io.WriteString(inW, "go\n")
	testtool.WaitFor(t, waitLong, "the container's exit recorded", func() error {
		_, err := os.Stat(filepath.Join(runDir(r.root, id), exitFile))
		return err
	})
	// Ended at once (nil), or refused as ended.
	err := r.Attach(context.Background(), id, runtime.AttachOptions{Stdout: io.Discard})
	if err != nil && !errors.Is(err, errNotRunning) {
		t.Errorf("attach as the shim ends: %v, want %v", err, errNotRunning)
	}
	close(out.release)
	select {
	case <-slow:
	case <-time.After(waitLong):
		t.Fatal("the slow session did not end")
	}
}

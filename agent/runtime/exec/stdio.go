//go:build linux

package exec

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/creack/pty"

	"github.com/berth-dev/berth/agent/runtime"
)

// containerIO is a container's standard streams as the shim makes them:
// with TTY one terminal for all three; else with Stdin a pipe the shim
// writes to, and stdout and stderr two pipes, which attach sessions get
// apart; without, stdin /dev/null and stdout and stderr one pipe, which
// keeps the log in the order the container wrote it (two pipes read at
// once cannot say which came first) and reaches attach sessions as
// stdout.
type containerIO struct {
	// child are the container's descriptors 0, 1 and 2.
	child [3]*os.File
	// childOnly are the files only the container keeps open, closed here
	// once it has started.
	childOnly []*os.File
	// input is the shim's end of the container's stdin; nil without
	// Stdin.
	input *os.File
	// term is the terminal's master, with TTY.
	term *os.File
	// stdout and stderr are the pipes' read ends, without TTY; stderr is
	// nil when stdout carries both.
	stdout, stderr *os.File
	// own are the shim's ends, closed when it is done.
	own []*os.File
}

// openStdio makes c's streams.
func openStdio(c *runtime.Container) (*containerIO, error) {
	s := &containerIO{}
	if c.TTY {
		ptmx, tty, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("open a terminal: %w", err)
		}
		s.term = ptmx
		s.own = append(s.own, ptmx)
		s.childOnly = append(s.childOnly, tty)
		s.child = [3]*os.File{tty, tty, tty}
		if c.Stdin {
			s.input = ptmx
		}
		return s, nil
	}
	ends := []**os.File{&s.stdout}
	if c.Stdin {
		ends = append(ends, &s.stderr)
	}
	for i, end := range ends {
		r, w, err := os.Pipe()
		if err != nil {
			s.started()
			s.close()
			return nil, err
		}
		*end = r
		s.own = append(s.own, r)
		s.childOnly = append(s.childOnly, w)
		s.child[i+1] = w
	}
	if s.stderr == nil {
		s.child[2] = s.child[1]
	}
	if c.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			s.started()
			s.close()
			return nil, err
		}
		s.input = w
		s.own = append(s.own, w)
		s.childOnly = append(s.childOnly, r)
		s.child[0] = r
	} else {
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			s.started()
			s.close()
			return nil, err
		}
		s.childOnly = append(s.childOnly, devnull)
		s.child[0] = devnull
	}
	return s, nil
}

// started closes the container's ends: the shim keeps only its own, so
// that the output ends when the container's processes have all closed
// theirs.
func (s *containerIO) started() {
	for _, f := range s.childOnly {
		f.Close()
	}
	s.childOnly = nil
}

// copyOutput writes the container's output to the log and to the attached
// sessions until it ends. A log that cannot be written loses the output,
// not the container: it is still read, so the container never blocks on
// a full pipe, and still reaches the sessions.
func (s *containerIO) copyOutput(log io.Writer, hub *attachHub) {
	var mu sync.Mutex
	copyStream := func(r *os.File, typ byte) {
		buf := make([]byte, attachChunk)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				mu.Lock()
				_, _ = log.Write(buf[:n])
				mu.Unlock()
				hub.broadcast(typ, buf[:n])
			}
			if err != nil {
				// EOF for a pipe; EIO for a terminal no process holds
				// open any more.
				return
			}
		}
	}
	switch {
	case s.term != nil:
		copyStream(s.term, frameStdout)
		return
	case s.stderr == nil:
		copyStream(s.stdout, frameStdout)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyStream(s.stdout, frameStdout)
	}()
	copyStream(s.stderr, frameStderr)
	<-done
}

// closeOutput closes the output pipes, which ends a copyOutput still
// reading them.
func (s *containerIO) closeOutput() {
	for _, f := range []*os.File{s.stdout, s.stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// close closes the shim's ends.
func (s *containerIO) close() {
	for _, f := range s.own {
		f.Close()
	}
}

// withTerm is env with the TERM the kubelet's runtimes give a terminal,
// unless it has one.
func withTerm(env []string) []string {
	if slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "TERM=") }) {
		return env
	}
	return append(slices.Clip(env), "TERM=xterm")
}

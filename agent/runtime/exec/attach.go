//go:build linux

package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/berth-dev/berth/agent/runtime"
)

// Why an attach cannot be made.
var (
	// errNotRunning: the run has ended, or not begun.
	errNotRunning = errors.New("the container is not running")
	// errShimGone: the run's shim died, and nothing holds the
	// container's streams any more.
	errShimGone = errors.New("the container's shim has ended: nothing serves its streams")
	// errNoAttach: the run's shim serves no attach socket.
	errNoAttach = errors.New("the container's shim serves no attach (it was started by an older agent)")
)

// Attach connects to the run's process through its shim's attach socket,
// so a run adopted after the agent restarted is attached to as well as
// one it started.
func (r *Runtime) Attach(ctx context.Context, id runtime.ID, opts runtime.AttachOptions) error {
	rn, err := r.lookup(id)
	if err != nil {
		return fmt.Errorf("attach %s: %w", id, err)
	}
	r.mu.Lock()
	state, dir := rn.status.State, rn.dir
	r.mu.Unlock()
	if state != runtime.StateRunning {
		return fmt.Errorf("attach %s: %w", id, errNotRunning)
	}
	conn, err := dialAttach(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No socket: a shim of an older agent, or one that has just
		// ended and removed it.
		if ended(rn) {
			return fmt.Errorf("attach %s: %w", id, errNotRunning)
		}
		return fmt.Errorf("attach %s: %w", id, errNoAttach)
	case errors.Is(err, syscall.ECONNREFUSED):
		// The socket is there but no shim listens: the run has just
		// ended, or its shim died and left the container running.
		if ended(rn) {
			return fmt.Errorf("attach %s: %w", id, errNotRunning)
		}
		return fmt.Errorf("attach %s: %w", id, errShimGone)
	case err != nil:
		return fmt.Errorf("attach %s: %w", id, err)
	}
	defer conn.Close()
	// Closing the connection ends every read and write on it.
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	err = speakAttach(conn, opts)
	if ctx.Err() != nil {
		return fmt.Errorf("attach %s: %w", id, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("attach %s: %w", id, err)
	}
	return nil
}

// ended reports whether rn's container has ended: the runtime has seen
// its shim end, or the shim has recorded the exit and is ending (it waits
// a little for the sessions to take the rest of the output, its socket
// closed meanwhile).
func ended(rn *run) bool {
	select {
	case <-rn.done:
		return true
	default:
	}
	_, err := os.Stat(filepath.Join(rn.dir, exitFile))
	return err == nil
}

// speakAttach speaks a session on conn: the hello, then the caller's
// input and sizes out and the process's output in, until the shim ends
// the session or the connection fails.
func speakAttach(conn net.Conn, opts runtime.AttachOptions) error {
	var streams byte
	if opts.Stdin != nil {
		streams |= attachStdin
	}
	if opts.Stdout != nil {
		streams |= attachStdout
	}
	if opts.Stderr != nil {
		streams |= attachStderr
	}
	// The input and the sizes are written from their own goroutines: one
	// lock keeps each frame whole.
	var wmu sync.Mutex
	send := func(typ byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return writeFrame(conn, typ, p)
	}
	if err := send(frameHello, []byte{streams}); err != nil {
		return err
	}
	// done stops the sizes' goroutine, which is waited for.
	var resized sync.WaitGroup
	defer resized.Wait()
	done := make(chan struct{})
	defer close(done)
	if opts.Stdin != nil {
		// Not waited for: it ends when the caller ends opts.Stdin, once
		// Attach has returned, or at its next write to the closed
		// connection.
		go func() {
			buf := make([]byte, attachChunk)
			for {
				n, err := opts.Stdin.Read(buf)
				if n > 0 {
					if send(frameStdin, buf[:n]) != nil {
						return
					}
				}
				if err != nil {
					_ = send(frameStdinEnd, nil)
					return
				}
			}
		}()
	}
	if opts.Resize != nil {
		resized.Add(1)
		go func() {
			defer resized.Done()
			for {
				select {
				case sz, ok := <-opts.Resize:
					if !ok {
						return
					}
					if send(frameResize, resizePayload(sz.Width, sz.Height)) != nil {
						return
					}
				case <-done:
					return
				}
			}
		}()
	}
	buf := make([]byte, attachChunk+frameHeader)
	for {
		typ, p, err := readFrame(conn, buf)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("the container's shim ended the session")
			}
			return err
		}
		var w io.Writer
		switch typ {
		case frameStdout:
			w = opts.Stdout
		case frameStderr:
			w = opts.Stderr
		case frameEnd:
			if len(p) > 0 {
				return errors.New(string(p))
			}
			return nil
		}
		if w != nil {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
	}
}

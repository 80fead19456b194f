//go:build linux

package exec

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Bounds of an attach session in the shim.
const (
	// helloTimeout bounds how long a connection may take to say what it
	// carries.
	helloTimeout = 10 * time.Second
	// sessionQueue is how many pieces of output (each at most
	// attachChunk) wait for a session that reads slowly; past it the
	// session is ended, as the container's output never waits for one.
	sessionQueue = 256
	// sessionWriteTimeout bounds one write to a session's connection.
	sessionWriteTimeout = time.Minute
	// sessionDrain bounds how long the shim, its container ended, waits
	// for the sessions to take the rest of the output: the runtime learns
	// of the exit when the shim is gone, and a session that does not read
	// must not hold that up for long.
	sessionDrain = 2 * time.Second
)

// msgFellBehind ends a session whose queue overflowed.
const msgFellBehind = "the attach session fell behind the container's output and was ended"

// attachHub is the shim's side of attach: the sessions attached to the
// container, which each get the output from the time they attach, and
// the container's input, which they write to. Sessions are the
// connections to the run's attach socket; the hub lives as long as the
// shim.
type attachHub struct {
	// input is the container's stdin as the shim holds it (the write end
	// of a pipe, or the terminal's master); nil when the container has no
	// stdin.
	input *os.File
	// once closes input when the first session that writes to it ends
	// (Container.StdinOnce).
	once bool
	// term is the terminal's master, for its size; nil without one.
	term *os.File

	// inMu keeps one session's input write whole against another's.
	inMu sync.Mutex
	// inClosed: the input is closed (StdinOnce) and takes no more; not
	// guarded by inMu, which closeInput must not wait for.
	inClosed atomic.Bool

	mu       sync.Mutex
	sessions map[*attachSession]struct{}
	// ended: the output has ended, and so has every session.
	ended bool
	wg    sync.WaitGroup
}

// attachSession is one connection. Output for it waits in out; its
// writer sends it, then frameEnd with endMsg, then closes the connection.
type attachSession struct {
	conn    net.Conn
	streams byte
	out     chan []byte
	// endMsg and closed are guarded by the hub's mu; out is closed once.
	endMsg string
	closed bool
}

func newAttachHub(input, term *os.File, once bool) *attachHub {
	return &attachHub{input: input, term: term, once: once, sessions: map[*attachSession]struct{}{}}
}

// serve takes connections from l until it is closed.
func (h *attachHub) serve(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		h.wg.Add(1)
		go h.session(conn)
	}
}

// session serves one connection: its hello, then its frames until it
// ends.
func (h *attachHub) session(conn net.Conn) {
	defer h.wg.Done()
	_ = conn.SetReadDeadline(time.Now().Add(helloTimeout))
	buf := make([]byte, attachChunk)
	typ, p, err := readFrame(conn, buf)
	if err != nil || typ != frameHello || len(p) != 1 {
		conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	s := &attachSession{conn: conn, streams: p[0], out: make(chan []byte, sessionQueue)}
	h.mu.Lock()
	if h.ended {
		s.closed = true
		close(s.out)
	} else {
		h.sessions[s] = struct{}{}
	}
	h.mu.Unlock()
	h.wg.Add(1)
	go h.write(s)

	inputOpen := s.streams&attachStdin != 0
	for {
		typ, p, err := readFrame(conn, buf)
		if err != nil {
			break
		}
		switch typ {
		case frameStdin:
			if inputOpen {
				h.writeInput(p)
			}
		case frameStdinEnd:
			if !inputOpen {
				continue
			}
			inputOpen = false
			h.inputEnded(s)
		case frameResize:
			if w, hgt, ok := parseResize(p); ok && h.term != nil {
				_ = pty.Setsize(h.term, &pty.Winsize{Cols: w, Rows: hgt})
			}
		}
	}
	// Gone: a session that could write ends its input by leaving.
	if inputOpen && h.input != nil && h.once {
		h.closeInput()
	}
	h.end(s, "")
}

// write sends s's output, then its end, then closes its connection,
// which ends its reader too.
func (h *attachHub) write(s *attachSession) {
	defer h.wg.Done()
	defer s.conn.Close()
	for frame := range s.out {
		h.mu.Lock()
		behind := s.endMsg == msgFellBehind
		h.mu.Unlock()
		if behind {
			// What it missed makes the rest worth nothing: it is told
			// at once.
			for range s.out {
			}
			break
		}
		_ = s.conn.SetWriteDeadline(time.Now().Add(sessionWriteTimeout))
		if _, err := s.conn.Write(frame); err != nil {
			h.end(s, "")
			for range s.out {
			}
			return
		}
	}
	h.mu.Lock()
	msg := s.endMsg
	h.mu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(sessionWriteTimeout))
	_ = writeFrame(s.conn, frameEnd, []byte(msg))
}

// end ends s, once, saying msg.
func (h *attachHub) end(s *attachSession, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endLocked(s, msg)
}

func (h *attachHub) endLocked(s *attachSession, msg string) {
	if s.closed {
		return
	}
	s.closed, s.endMsg = true, msg
	delete(h.sessions, s)
	close(s.out)
}

// broadcast queues output for every session that carries its stream. A
// session whose queue is full is ended rather than waited for.
func (h *attachHub) broadcast(typ byte, p []byte) {
	want := attachStdout
	if typ == frameStderr {
		want = attachStderr
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var frame []byte
	for s := range h.sessions {
		if s.streams&want == 0 {
			continue
		}
		if frame == nil {
			frame = appendFrame(make([]byte, 0, frameHeader+len(p)), typ, p)
		}
		select {
		case s.out <- frame:
		default:
			h.endLocked(s, msgFellBehind)
		}
	}
}

// outputEnded ends every session: the container's output has ended, and
// no session can get more. Sessions that connect later are ended at once.
func (h *attachHub) outputEnded() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	for s := range h.sessions {
		h.endLocked(s, "")
	}
}

// writeInput writes a session's input to the container's, when it has
// one still open.
func (h *attachHub) writeInput(p []byte) {
	if h.input == nil {
		return
	}
	h.inMu.Lock()
	defer h.inMu.Unlock()
	if h.inClosed.Load() {
		return
	}
	// A container that has closed its input drops what comes, and so
	// does a write the close of the input ends.
	_, _ = h.input.Write(p)
}

// inputEnded answers a session whose input ended: with StdinOnce the
// container's input is closed and the session goes on with the output;
// without, the container's input stays open for others, and the session
// is over, as the kubelet's runtimes end it.
func (h *attachHub) inputEnded(s *attachSession) {
	if h.input == nil {
		return
	}
	if h.once {
		h.closeInput()
		return
	}
	h.end(s, "")
}

// closeInput closes the container's input, once. A pipe is closed, and
// the container reads its end; a terminal cannot be closed without
// hanging the container up, so it is sent the terminal's end-of-file
// character instead (what a user's Ctrl-D sends), and nothing more.
func (h *attachHub) closeInput() {
	if h.term == nil {
		// Not under inMu: closing unblocks a write the container does
		// not read.
		if !h.inClosed.Swap(true) {
			h.input.Close()
		}
		return
	}
	h.inMu.Lock()
	defer h.inMu.Unlock()
	if h.inClosed.Swap(true) {
		return
	}
	eof := byte(4) // ^D, the default VEOF
	if t, err := unix.IoctlGetTermios(int(h.term.Fd()), unix.TCGETS); err == nil && t.Cc[unix.VEOF] != 0 {
		eof = t.Cc[unix.VEOF]
	}
	_, _ = h.term.Write([]byte{eof})
}

// wait waits for the sessions' goroutines to end, at most until timeout.
func (h *attachHub) wait(timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

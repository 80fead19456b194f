package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/runtime"
)

// Kubernetes' streaming protocol over a WebSocket, as kubectl exec and
// attach speak it: each binary message is a channel number and that
// channel's bytes.
// v5 adds a message that closes a channel (the client's end of stdin);
// under v4 stdin ends with the connection.
const (
	execProtocolV5 = "v5.channel.k8s.io"
	execProtocolV4 = "v4.channel.k8s.io"

	channelStdin  byte = 0
	channelStdout byte = 1
	channelStderr byte = 2
	// channelError carries the outcome, a metav1.Status, once the command
	// or the attach has ended.
	channelError byte = 3
	// channelResize carries a terminal's size as JSON,
	// {"Width":80,"Height":24}.
	channelResize byte = 4
	// channelClose, then a channel number: that channel has ended (v5).
	channelClose byte = 255
)

// Bounds of an exec's or an attach's connection: one message from the
// client (stdin is sent in pieces of at most 32 KiB by kubectl), and how
// long a write may wait on a client that does not read.
const (
	execMaxMessage   = 1 << 20
	execWriteTimeout = time.Minute
)

// execUpgrader speaks the protocols kubectl offers, for exec and attach.
// Origins are not checked: requests come from the API server alone,
// which the client certificate proves.
var execUpgrader = websocket.Upgrader{
	Subprotocols:    []string{execProtocolV5, execProtocolV4},
	ReadBufferSize:  32 << 10,
	WriteBufferSize: 32 << 10,
	CheckOrigin:     func(*http.Request) bool { return true },
}

// streamRequest is which streams an exec or an attach carries.
type streamRequest struct {
	stdin, stdout, stderr, tty bool
}

// sessionStreams are a session's streams as the runtime takes them: nil
// where the request carries none.
type sessionStreams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	resize         <-chan runtime.TerminalSize
}

// session is an upgraded exec or attach: its streams, a context that
// ends with the connection, how its outcome is told, and how it ends.
type session struct {
	ctx     context.Context
	streams sessionStreams
	finish  func(metav1.Status)
	close   func()
}

// serveStreams serves an exec or an attach (what) of a running container:
// it answers 400 without an upgrade to one of kubectl's protocols (a
// WebSocket, or SPDY, kubectl's fallback) or for a container that does
// not run, else upgrades and runs run with the session's streams, then
// sends run's outcome. The session's context ends with the connection: a
// user who left leaves nothing running on the connection's behalf, and
// no one is told the outcome.
func (s *containerServer) serveStreams(w http.ResponseWriter, r *http.Request, what string, req streamRequest,
	run func(ctx context.Context, id runtime.ID, st sessionStreams) metav1.Status) {
	ns, pod, ctr := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	spdy := isSPDYUpgrade(r)
	if !spdy && (!websocket.IsWebSocketUpgrade(r) || !offers(r, execProtocolV5, execProtocolV4)) {
		http.Error(w, fmt.Sprintf("%s takes a WebSocket upgrade with protocol %s or %s, or an upgrade to %s with protocol %s", what, execProtocolV5, execProtocolV4, spdyUpgrade, spdyProtocolV4), http.StatusBadRequest)
		return
	}
	id, st, ok := s.run(w, r, ns, pod, ctr, false)
	if !ok {
		return
	}
	if st.State != runtime.StateRunning {
		http.Error(w, fmt.Sprintf("container %s of pod %s/%s is not running", ctr, ns, pod), http.StatusBadRequest)
		return
	}
	var sess *session
	if spdy {
		sess, ok = upgradeSPDY(w, r, req, s.opts.Clock)
	} else {
		sess, ok = upgradeWebSocket(w, r, req)
	}
	if !ok {
		// The upgrader has answered.
		return
	}
	defer sess.close()
	outcome := run(sess.ctx, id, sess.streams)
	if sess.ctx.Err() != nil {
		return
	}
	sess.finish(outcome)
}

// upgradeWebSocket upgrades r to a WebSocket carrying the streams req
// asks for; false when it has answered with an error.
func upgradeWebSocket(w http.ResponseWriter, r *http.Request, req streamRequest) (*session, bool) {
	conn, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, false
	}
	conn.SetReadLimit(execMaxMessage)
	ctx, cancel := context.WithCancel(r.Context())
	ws := &execSession{conn: conn, v5: conn.Subprotocol() == execProtocolV5}
	sess := &session{ctx: ctx, finish: ws.finish}
	if req.stdout {
		sess.streams.stdout = ws.channel(channelStdout)
	}
	if req.stderr {
		sess.streams.stderr = ws.channel(channelStderr)
	}
	// Without stdin asked for there is no pipe: stdin frames the client
	// sends anyway are dropped, not left blocking the reader (and with it
	// pings, resizes and the end of the connection).
	var stdinR *io.PipeReader
	var stdinW *io.PipeWriter
	if req.stdin {
		stdinR, stdinW = io.Pipe()
		sess.streams.stdin = stdinR
	}
	resize := make(chan runtime.TerminalSize, 1)
	if req.tty {
		sess.streams.resize = resize
	}
	// The reader ends when the connection is closed.
	go ws.read(cancel, stdinW, resize)
	sess.close = func() {
		cancel()
		if stdinR != nil {
			stdinR.Close()
		}
		conn.Close()
	}
	return sess, true
}

// offers reports whether a WebSocket request offers one of protocols.
func offers(r *http.Request, protocols ...string) bool {
	for _, p := range websocket.Subprotocols(r) {
		for _, want := range protocols {
			if p == want {
				return true
			}
		}
	}
	return false
}

// execSession is one exec's or attach's connection: writes of every channel go
// through one lock, as a WebSocket takes one writer at a time.
type execSession struct {
	conn *websocket.Conn
	v5   bool
	mu   sync.Mutex
}

// channel is a writer that sends each write as one message of channel ch.
func (s *execSession) channel(ch byte) io.Writer {
	return channelWriter{s, ch}
}

type channelWriter struct {
	s  *execSession
	ch byte
}

func (w channelWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := w.s.send(w.ch, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// send writes p as one message of channel ch, the channel's byte first.
func (s *execSession) send(ch byte, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(execWriteTimeout))
	w, err := s.conn.NextWriter(websocket.BinaryMessage)
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte{ch}); err != nil {
		return err
	}
	if _, err := w.Write(p); err != nil {
		return err
	}
	return w.Close()
}

// read takes the client's messages until the connection ends: stdin's
// bytes, its close (v5), and terminal sizes. Reading also answers the
// client's pings. When the connection ends, stdin ends and cancel stops
// the command.
func (s *execSession) read(cancel context.CancelFunc, stdin *io.PipeWriter, resize chan runtime.TerminalSize) {
	defer cancel()
	for {
		kind, msg, err := s.conn.ReadMessage()
		if err != nil {
			if stdin != nil {
				stdin.CloseWithError(io.EOF)
			}
			return
		}
		if kind != websocket.BinaryMessage || len(msg) == 0 {
			continue
		}
		switch msg[0] {
		case channelStdin:
			if stdin == nil {
				continue
			}
			if _, err := stdin.Write(msg[1:]); err != nil {
				// The command has finished with stdin: drop what comes.
				continue
			}
		case channelResize:
			var sz runtime.TerminalSize
			if json.Unmarshal(msg[1:], &sz) != nil {
				continue
			}
			// Only the newest size matters.
			select {
			case <-resize:
			default:
			}
			resize <- sz
		case channelClose:
			if s.v5 && len(msg) > 1 && msg[1] == channelStdin && stdin != nil {
				stdin.Close()
			}
		}
	}
}

// finish sends the outcome and closes the connection as kubectl expects:
// the error channel's message, then a normal close, which ends every
// stream on its side.
func (s *execSession) finish(st metav1.Status) {
	body, err := json.Marshal(st)
	if err == nil {
		_ = s.send(channelError, body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
}

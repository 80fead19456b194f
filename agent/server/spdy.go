package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/runtime"
)

// kubectl falls back to Kubernetes' streaming protocol over SPDY when a
// WebSocket is refused it, and speaks nothing else before 1.30, nor with
// KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false: each stream (error, stdin,
// stdout, stderr, resize) is a SPDY stream the client opens, named by its
// streamType header. Of its versions the agent speaks v4, which every
// kubectl since 1.5 offers: the outcome is a metav1.Status as JSON on the
// error stream, as under the WebSocket's v5.
const (
	spdyUpgrade    = "SPDY/3.1"
	spdyProtocolV4 = "v4.channel.k8s.io"
	// spdyStreamTimeout bounds how long the client may take to open its
	// streams, as the kubelet's stream creation timeout does.
	spdyStreamTimeout = 30 * time.Second
)

// isSPDYUpgrade reports whether r asks to be upgraded to SPDY.
func isSPDYUpgrade(r *http.Request) bool {
	return httpstream.IsUpgradeRequest(r) && strings.Contains(strings.ToLower(r.Header.Get(httpstream.HeaderUpgrade)), strings.ToLower(spdyUpgrade))
}

// spdyStream is a stream the client opened, and when its reply has gone.
type spdyStream struct {
	stream    httpstream.Stream
	replySent <-chan struct{}
}

// upgradeSPDY upgrades r to SPDY and waits for the client's streams, one
// of each kind req asks for and the error stream; false when it has
// answered, or the client did not open them in time on clk.
func upgradeSPDY(w http.ResponseWriter, r *http.Request, req streamRequest, clk clock.Clock) (*session, bool) {
	if _, err := httpstream.Handshake(r, w, []string{spdyProtocolV4}); err != nil {
		return nil, false // Handshake has answered
	}
	opened := make(chan spdyStream)
	waiting := make(chan struct{})
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, replySent <-chan struct{}) error {
		select {
		case opened <- spdyStream{st, replySent}:
			return nil
		case <-waiting:
			return fmt.Errorf("stream %q opened after the session began", st.Headers().Get(corev1.StreamType))
		}
	})
	if conn == nil {
		close(waiting)
		return nil, false // the upgrader has answered
	}
	streams := map[string]httpstream.Stream{}
	want := 1
	for _, on := range []bool{req.stdin, req.stdout, req.stderr, req.tty} {
		if on {
			want++
		}
	}
	timeout := clk.NewTimer(spdyStreamTimeout)
	defer timeout.Stop()
	for len(streams) < want {
		select {
		case st := <-opened:
			kind := st.stream.Headers().Get(corev1.StreamType)
			switch kind {
			case corev1.StreamTypeError, corev1.StreamTypeStdin, corev1.StreamTypeStdout, corev1.StreamTypeStderr, corev1.StreamTypeResize:
				streams[kind] = st.stream
			default:
				st.stream.Reset()
				continue
			}
			select {
			case <-st.replySent:
			case <-timeout.C():
				close(waiting)
				conn.Close()
				return nil, false
			}
		case <-timeout.C():
			close(waiting)
			conn.Close()
			return nil, false
		case <-conn.CloseChan():
			close(waiting)
			conn.Close()
			return nil, false
		}
	}
	close(waiting)

	ctx, cancel := context.WithCancel(r.Context())
	// The session ends with the connection; the watch ends with either.
	go func() {
		select {
		case <-conn.CloseChan():
			cancel()
		case <-ctx.Done():
		}
	}()
	sess := &session{ctx: ctx}
	if st, ok := streams[corev1.StreamTypeStdin]; ok && req.stdin {
		// The client closes its side when its input ends.
		sess.streams.stdin = st
	}
	if st, ok := streams[corev1.StreamTypeStdout]; ok && req.stdout {
		sess.streams.stdout = st
	}
	if st, ok := streams[corev1.StreamTypeStderr]; ok && req.stderr {
		sess.streams.stderr = st
	}
	if st, ok := streams[corev1.StreamTypeResize]; ok && req.tty {
		resize := make(chan runtime.TerminalSize, 1)
		sess.streams.resize = resize
		go func() {
			dec := json.NewDecoder(st)
			for {
				var sz runtime.TerminalSize
				if dec.Decode(&sz) != nil {
					return
				}
				// Only the newest size matters.
				select {
				case <-resize:
				default:
				}
				resize <- sz
			}
		}()
	}
	sess.finish = func(outcome metav1.Status) {
		if st, ok := streams[corev1.StreamTypeError]; ok {
			if body, err := json.Marshal(outcome); err == nil {
				_, _ = st.Write(body)
			}
		}
		// Each stream's end, before the connection's, tells the client
		// it has everything.
		for _, st := range streams {
			_ = st.Close()
		}
	}
	sess.close = func() {
		cancel()
		conn.Close()
	}
	return sess, true
}

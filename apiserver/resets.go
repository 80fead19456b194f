package apiserver

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"

	"golang.org/x/time/rate"
)

// An HTTP/2 client may open a stream and reset it at once, again and
// again: each stream runs a handler, but never counts against the
// connection's MaxConcurrentStreams for long (CVE-2023-44487, "rapid
// reset"). x/net/http2 bounds the handlers of one connection running at
// once, not how many it may reset: 25,000 ran in a row without a GOAWAY.
// The server counts, per connection, the requests whose client went away
// before their answer was done, and a connection past its budget is told
// to go away (GOAWAY, then closed) on its next request, which is answered
// 429 without being served. Unauthenticated requests over HTTP/2 get a
// GOAWAY after their 401, as Kubernetes' servers do since that CVE.

// Budget of the streams a connection may reset: a burst, then a steady
// rate. An informer's watches ended by its owner are a few resets an
// hour; a rapid-reset attacker sends thousands a second.
const (
	resetBurst      = 200
	resetsPerSecond = 10
)

// connLimits is what the server knows of one connection.
type connLimits struct {
	resets *rate.Limiter
	// away is set once the connection has spent its budget.
	away atomic.Bool
}

type connKey struct{}

// connContext gives each connection Serve accepts its connLimits.
func (s *Server) connContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connLimits{resets: rate.NewLimiter(resetsPerSecond, resetBurst)})
}

func connLimitsOf(r *http.Request) *connLimits {
	c, _ := r.Context().Value(connKey{}).(*connLimits)
	return c
}

// goAway makes x/net/http2 send GOAWAY once this answer's headers are
// written and close the connection when its streams are done; an
// HTTP/1 connection closes after the answer.
func goAway(w http.ResponseWriter) { w.Header().Set("Connection", "close") }

// refuseReset answers, and reports true for, a request on a connection
// that has reset more streams than it may.
func (s *Server) refuseReset(w http.ResponseWriter, r *http.Request) bool {
	c := connLimitsOf(r)
	if c == nil || !c.away.Load() {
		return false
	}
	goAway(w)
	WriteError(w, tooManyResets())
	return true
}

// countReset counts a request whose client left before its answer was
// done (a reset stream, or a closed connection) against its connection.
func (s *Server) countReset(r *http.Request) {
	c := connLimitsOf(r)
	if c == nil || r.Context().Err() == nil || s.shuttingDown() {
		return
	}
	if !c.resets.AllowN(s.clock.Now(), 1) && !c.away.Swap(true) {
		s.log.Warn("connection resets too many streams: told to go away", "remote", r.RemoteAddr)
	}
}

package ingress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// upstream is the proxy's HTTP/1.1 client for the requests whose body
// is known before they are sent (none, or one buffered for a retry): it
// writes the request and reads the answer on the serving goroutine,
// over keep-alive connections pooled per endpoint. http.Transport hands
// every request to a writer and a reader goroutine of its connection and
// back, which with httputil.ReverseProxy's copies was most of the
// proxy's CPU. The answer is parsed by net/http's own ReadResponse. The
// requests it does not take (upgrades, streamed bodies, Expect) go
// through httputil.ReverseProxy and http.Transport as before.
type upstream struct {
	dialer      net.Dialer
	clock       clock.PassiveClock
	maxIdle     int // per endpoint, as the Transport's MaxIdleConnsPerHost
	idleTimeout time.Duration

	mu        sync.Mutex
	idle      map[string][]*upConn // by endpoint, the most recent last
	lastSweep time.Time
}

// maxResponseHeader bounds an answer's header, as http.Transport's
// default MaxResponseHeaderBytes.
const maxResponseHeader = 10 << 20

// max1xx bounds the informational answers before the final one, as
// http.Transport does.
const max1xx = 5

func newUpstream(clk clock.PassiveClock) *upstream {
	return &upstream{
		dialer:      net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		clock:       clk,
		maxIdle:     256,
		idleTimeout: 90 * time.Second,
		idle:        map[string][]*upConn{},
	}
}

// upConn is one keep-alive connection to an endpoint.
type upConn struct {
	conn   net.Conn
	raw    syscall.RawConn // for the liveness check; nil without one
	lim    limitReader
	br     *bufio.Reader
	bw     *bufio.Writer
	addr   string
	idleAt time.Time
	reused bool
	// stop ends the watch of the request's context; false when it
	// already fired (the connection's deadline was set to abort).
	stop func() bool
}

// limitReader bounds what an answer's header may read; the body reads
// unbounded.
type limitReader struct {
	r io.Reader
	n int64
}

var errHeaderTooLarge = errors.New("ingress: upstream answer header too large")

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

func (c *upConn) close() { _ = c.conn.Close() }

func (u *upstream) dial(ctx context.Context, addr string) (*upConn, error) {
	conn, err := u.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &upConn{conn: conn, addr: addr}
	if sc, ok := conn.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	c.lim.r = conn
	c.br = bufio.NewReader(&c.lim)
	c.bw = bufio.NewWriter(conn)
	return c, nil
}

// get is an idle connection to addr that is still open, else a new one.
func (u *upstream) get(ctx context.Context, addr string) (*upConn, error) {
	now := u.clock.Now()
	for {
		u.mu.Lock()
		list := u.idle[addr]
		if len(list) == 0 {
			u.mu.Unlock()
			return u.dial(ctx, addr)
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		u.idle[addr] = list[:len(list)-1]
		u.mu.Unlock()
		// An endpoint that closed the connection while it was idle (its
		// keep-alive timeout, a restart) has left an EOF to read: found
		// here, before a request that may not be sent twice is lost on it.
		if now.Sub(c.idleAt) < u.idleTimeout && alive(c.raw) {
			c.reused = true
			return c, nil
		}
		c.close()
	}
}

// put keeps a connection whose last answer was read whole, and closes
// those idle for longer than idleTimeout.
func (u *upstream) put(c *upConn) {
	now := u.clock.Now()
	c.idleAt = now
	var stale []*upConn
	u.mu.Lock()
	if len(u.idle[c.addr]) >= u.maxIdle {
		stale = append(stale, c)
	} else {
		u.idle[c.addr] = append(u.idle[c.addr], c)
	}
	if now.Sub(u.lastSweep) >= u.idleTimeout/2 {
		u.lastSweep = now
		stale = u.dropLocked(func(c *upConn) bool { return now.Sub(c.idleAt) >= u.idleTimeout }, stale)
	}
	u.mu.Unlock()
	for _, c := range stale {
		c.close()
	}
}

// retain closes the idle connections to endpoints not in keep: the
// routing table dropped them.
func (u *upstream) retain(keep map[string]bool) {
	u.mu.Lock()
	stale := u.dropLocked(func(c *upConn) bool { return !keep[c.addr] }, nil)
	u.mu.Unlock()
	for _, c := range stale {
		c.close()
	}
}

// closeIdle closes every idle connection.
func (u *upstream) closeIdle() {
	u.retain(nil)
}

func (u *upstream) dropLocked(drop func(*upConn) bool, out []*upConn) []*upConn {
	for addr, list := range u.idle {
		kept := list[:0]
		for _, c := range list {
			if drop(c) {
				out = append(out, c)
			} else {
				kept = append(kept, c)
			}
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(u.idle, addr)
		} else {
			u.idle[addr] = kept
		}
	}
	return out
}

// idleCount is the number of idle connections to addr, for tests.
func (u *upstream) idleCount(addr string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.idle[addr])
}

// aLongTimeAgo is a deadline that makes a blocked read or write return.
var aLongTimeAgo = time.Unix(1, 0)

// send writes a request (write) to addr, over a pooled connection or a new one, and
// waits for the first byte of the answer. A pooled connection that
// fails before that is one the endpoint closed meanwhile: a request
// that may be sent twice (replay) is sent again over a new connection,
// as http.Transport does. The connection is the caller's until
// release; a cancelled ctx aborts its reads and writes.
func (u *upstream) send(ctx context.Context, addr string, write func(*bufio.Writer) error, replay bool) (*upConn, error) {
	for {
		c, err := u.get(ctx, addr)
		if err != nil {
			return nil, err
		}
		c.stop = context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(aLongTimeAgo) })
		err = write(c.bw)
		if err == nil {
			err = c.bw.Flush()
		}
		if err == nil {
			c.lim.n = maxResponseHeader
			_, err = c.br.Peek(1)
		}
		if err == nil {
			return c, nil
		}
		c.stop()
		c.close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		if !c.reused || !replay {
			return nil, err
		}
	}
}

// readResponse reads the next answer's status and header; its body is
// read from the connection, after.
func (c *upConn) readResponse(r *http.Request) (*http.Response, error) {
	c.lim.n = maxResponseHeader
	resp, err := http.ReadResponse(c.br, r)
	c.lim.n = math.MaxInt64
	return resp, err
}

// release gives the connection back to the pool, when its answer was
// read whole and neither side asked to close it, or closes it.
func (u *upstream) release(c *upConn, reuse bool) {
	if !c.stop() || !reuse || c.br.Buffered() > 0 {
		c.close()
		return
	}
	u.put(c)
}

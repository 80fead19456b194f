package ingress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// front is the proxy's own HTTP/1.1 server on the plain-HTTP listener.
// It serves the requests a reverse proxy mostly sees (HTTP/1.1, an
// origin-form target, one Host, no body or one of known length up to
// MaxRetryBody, no upgrade or Expect) on the connection's goroutine:
// the head is parsed in place, routed, written to the endpoint over
// upstream, and the answer written back, with no net/http request,
// response, background reader or goroutine hand-off per request, which
// cost more than half of the proxy's CPU (docs/benchmarks.md). At the
// first request it does not take (HTTP/1.0, HTTP/2 without TLS,
// WebSockets, chunked or long bodies, anything unusual or malformed) it
// hands the connection, with what it has read of it, to net/http's
// server and the Proxy's ServeHTTP, which take every request and answer
// the malformed ones as they always have.
type front struct {
	p       *Proxy
	l       net.Listener
	handoff *handoffListener
	hs      *http.Server

	closing atomic.Bool
	mu      sync.Mutex
	conns   map[*frontConn]struct{}
}

const (
	// frontHeaderTimeout bounds the reading of a request's head, as the
	// net/http server's ReadHeaderTimeout.
	frontHeaderTimeout = 30 * time.Second
	// frontIdleTimeout closes a keep-alive connection no request came
	// on for this long.
	frontIdleTimeout = 90 * time.Second
	// frontReadBuffer is the most of a request's head the front reads;
	// a longer head goes to net/http, which takes up to 1 MiB.
	frontReadBuffer = 8 << 10
	// watchAfter is how long a request waits for its endpoint before
	// the front watches its client for going away (see watchClient).
	watchAfter = 20 * time.Millisecond
)

// newFront serves l through p; errLog is the net/http server's log.
func newFront(p *Proxy, l net.Listener, protocols *http.Protocols, errLog *log.Logger) *front {
	f := &front{p: p, l: l, conns: map[*frontConn]struct{}{},
		handoff: &handoffListener{addr: l.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}}
	f.hs = &http.Server{Handler: p, Protocols: protocols, ReadHeaderTimeout: frontHeaderTimeout,
		IdleTimeout: frontIdleTimeout, ErrorLog: errLog}
	return f
}

// serve accepts connections until shutdown or an error of the listener.
func (f *front) serve() error {
	go func() { _ = f.hs.Serve(f.handoff) }() // ErrServerClosed at shutdown
	var delay time.Duration
	for {
		c, err := f.l.Accept()
		if err != nil {
			if f.closing.Load() {
				return http.ErrServerClosed
			}
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				// Out of file descriptors (EMFILE) and the like: wait,
				// as net/http's server does, rather than stop serving.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		fc := f.newConn(c)
		f.mu.Lock()
		if f.closing.Load() {
			f.mu.Unlock()
			_ = c.Close()
			return http.ErrServerClosed
		}
		f.conns[fc] = struct{}{}
		f.mu.Unlock()
		go fc.serve()
	}
}

// shutdown stops taking connections, closes the idle ones, and waits
// for the requests in flight to be answered, until ctx ends, when the
// rest are closed; then it shuts the net/http server down the same way.
func (f *front) shutdown(ctx context.Context) error {
	f.closing.Store(true)
	_ = f.l.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		f.mu.Lock()
		for fc := range f.conns {
			if fc.state.CompareAndSwap(connIdle, connClosed) {
				_ = fc.c.Close()
			}
		}
		n := len(f.conns)
		if n > 0 && ctx.Err() != nil {
			for fc := range f.conns {
				_ = fc.c.Close()
			}
		}
		f.mu.Unlock()
		if n == 0 || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	return f.hs.Shutdown(ctx)
}

func (f *front) forget(fc *frontConn) {
	f.mu.Lock()
	delete(f.conns, fc)
	f.mu.Unlock()
}

// handoffListener gives net/http's server the connections the front
// hands over.
type handoffListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// replayConn is a connection whose first bytes were read already: they
// are read again first.
type replayConn struct {
	net.Conn
	buf []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// The states of a front connection, for shutdown.
const (
	connActive int32 = iota
	connIdle
	connClosed
)

// frontConn is one client connection the front serves.
type frontConn struct {
	f        *front
	c        net.Conn
	raw      syscall.RawConn // for watchClient; nil without one
	br       *bufio.Reader
	bw       *bufio.Writer
	remote   string
	clientIP string
	state    atomic.Int32

	req  request
	head []byte // the head of req, copied out of br
	body []byte // its body
	ans  answerHead

	// The answer: its status and body bytes, for the access log; close
	// when the connection ends after it.
	status int
	bytes  int64
	close  bool

	write func(*bufio.Writer) error // writeRequest, bound once
	// ctx is the requests' while the client is there: watchClient
	// cancels it, and the connection ends.
	ctx       context.Context
	cancel    context.CancelFunc
	watch     *time.Timer
	watchDone chan struct{}
}

func (f *front) newConn(c net.Conn) *frontConn {
	fc := &frontConn{f: f, c: c, br: bufio.NewReaderSize(c, frontReadBuffer), bw: bufio.NewWriterSize(c, 4<<10),
		remote: c.RemoteAddr().String(), watchDone: make(chan struct{}, 1)}
	if host, _, err := net.SplitHostPort(fc.remote); err == nil {
		fc.clientIP = host
	}
	if sc, ok := c.(syscall.Conn); ok {
		fc.raw, _ = sc.SyscallConn()
	}
	fc.write = fc.writeRequest
	fc.watch = time.AfterFunc(time.Hour, fc.watchClient)
	fc.watch.Stop()
	return fc
}

// errHandOff says the request is net/http's to serve.
var errHandOff = errors.New("ingress: not a request the front takes")

func (fc *frontConn) serve() {
	handedOff := false
	defer func() {
		fc.f.forget(fc)
		if fc.cancel != nil {
			fc.cancel()
		}
		if !handedOff {
			_ = fc.c.Close()
		}
	}()
	for {
		fc.state.Store(connIdle)
		if fc.f.closing.Load() {
			return
		}
		err := fc.readRequest()
		if !fc.state.CompareAndSwap(connIdle, connActive) {
			return // closed by shutdown
		}
		if errors.Is(err, errHandOff) {
			handedOff = fc.handOff()
			return
		}
		if err != nil {
			return
		}
		fc.serveRequest()
		if cap(fc.body) > 16<<10 {
			fc.body = nil // a long body's buffer is not kept while idle
		}
		if fc.close || fc.f.closing.Load() {
			return
		}
	}
}

// handOff gives the connection, with what was read of it, to net/http.
func (fc *frontConn) handOff() bool {
	buf, _ := fc.br.Peek(fc.br.Buffered())
	c := &replayConn{Conn: fc.c, buf: bytes.Clone(buf)}
	_ = fc.c.SetReadDeadline(time.Time{})
	select {
	case fc.f.handoff.conns <- c:
		return true
	case <-fc.f.handoff.done:
		return false
	}
}

// readRequest reads the next request's head and body into fc.req; it
// is errHandOff for one the front does not take, with nothing consumed.
func (fc *frontConn) readRequest() error {
	_ = fc.c.SetReadDeadline(time.Now().Add(frontIdleTimeout))
	end, ok, err := peekHead(fc.br, fc.headerDeadline)
	if err != nil {
		return err
	}
	if !ok {
		return errHandOff
	}
	buf, _ := fc.br.Peek(end)
	fc.head = append(fc.head[:0], buf...)
	if err := fc.req.parse(fc.head); err != nil {
		return err
	}
	_, _ = fc.br.Discard(end)
	fc.body = fc.body[:0]
	if n := fc.req.contentLength; n > 0 {
		fc.body = append(fc.body, make([]byte, n)...)
		if _, err := io.ReadFull(fc.br, fc.body); err != nil {
			return err
		}
	}
	return nil
}

// headerDeadline gives the rest of a head, once part of it is in, the
// header timeout.
func (fc *frontConn) headerDeadline() {
	_ = fc.c.SetReadDeadline(time.Now().Add(frontHeaderTimeout))
}

// headEnd is the length of the head at the start of buf, 0 when it is
// not all in; bare when a line of it ends in a bare LF, which net/http
// takes and the front leaves to it. The search starts at from.
func headEnd(buf []byte, from int) (end int, bare bool) {
	for i := from; i < len(buf); i++ {
		if buf[i] != '\n' {
			continue
		}
		if i == 0 || buf[i-1] != '\r' {
			return 0, true
		}
		if i >= 3 && buf[i-2] == '\n' && buf[i-3] == '\r' {
			return i + 1, false
		}
	}
	return 0, false
}

// serveRequest answers fc.req and logs it.
func (fc *frontConn) serveRequest() {
	p := fc.f.p
	r := &fc.req
	start := p.clock.Now()
	route := p.table.Load().Match(r.host, r.path, false)
	st := state{route: route}
	fc.status, fc.bytes, fc.close = 0, 0, r.close
	if msg, status := route.refusal(); status != 0 {
		fc.writeError(status, msg+"\n")
	} else {
		if fc.ctx == nil {
			fc.ctx, fc.cancel = context.WithCancel(context.Background())
		}
		fc.watch.Reset(watchAfter)
		aborted := p.forward(fc.ctx, &st, r.method == http.MethodHead, idempotentMethod(r.method), fc.write, fc)
		fc.stopWatch()
		if aborted || fc.ctx.Err() != nil { // cut short, or the client left
			fc.close = true
		}
	}
	p.record(context.Background(), &st, accessEntry{remote: fc.remote, host: r.host, method: r.method, uri: r.uri,
		proto: "HTTP/1.1", status: fc.status, bytes: fc.bytes, elapsed: p.clock.Since(start)})
}

// watchClient runs when a request has waited watchAfter for its
// endpoint: it waits for the client's connection to be closed and then
// cancels the request, as net/http's server does with a reader in the
// background for every request. A quick request costs a timer alone.
func (fc *frontConn) watchClient() {
	defer func() { fc.watchDone <- struct{}{} }()
	if waitClosed(fc.raw) {
		fc.cancel()
	}
}

// stopWatch stops the watch of the client, waiting for it if it began.
func (fc *frontConn) stopWatch() {
	if fc.watch.Stop() {
		return
	}
	// Started: make its wait return, and wait for it; the next request
	// sets a read deadline again.
	_ = fc.c.SetReadDeadline(aLongTimeAgo)
	<-fc.watchDone
}

// writeRequest writes fc.req as the proxy passes a request on, as
// writeRequest does for one net/http read.
func (fc *frontConn) writeRequest(bw *bufio.Writer) error {
	r := &fc.req
	bw.WriteString(r.method)
	bw.WriteByte(' ')
	bw.WriteString(r.target)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(r.host)
	bw.WriteString("\r\n")
	for line := range fieldLines(r.fields) {
		name, value := splitField(line)
		if r.dropped(name) {
			continue
		}
		bw.Write(name)
		bw.WriteString(": ")
		bw.Write(value)
		bw.WriteString("\r\n")
	}
	if r.teTrailers {
		bw.WriteString("Te: trailers\r\n")
	}
	if fc.clientIP != "" {
		bw.WriteString("X-Forwarded-For: ")
		bw.WriteString(fc.clientIP)
		bw.WriteString("\r\n")
	}
	bw.WriteString("X-Forwarded-Host: ")
	bw.WriteString(r.host)
	bw.WriteString("\r\nX-Forwarded-Proto: http\r\n")
	switch r.method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		if len(fc.body) == 0 {
			_, err := bw.WriteString("\r\n")
			return err
		}
	}
	writeLength(bw, int64(len(fc.body)))
	bw.WriteString("\r\n")
	_, err := bw.Write(fc.body)
	return err
}

// relay passes the endpoint's answer on: as it came, less its
// hop-by-hop fields, when its head is a plain one (answerHead), else
// through net/http's ReadResponse.
func (fc *frontConn) relay(c *upConn, head bool) (aborted bool, err error) {
	c.lim.n = maxResponseHeader
	end, ok, err := peekHead(c.br, nil)
	if err != nil {
		return false, err
	}
	if ok {
		buf, _ := c.br.Peek(end)
		if fc.ans.parse(buf, head) {
			c.lim.n = math.MaxInt64
			return fc.answerHead(c, &fc.ans), nil
		}
	}
	resp, err := readFinal(c, head, fc.informational)
	if err != nil {
		return false, err
	}
	return fc.answer(c, resp), nil
}

// answerHead writes an answer parse took: its fields as they came, in
// the connection's buffer, then its body.
func (fc *frontConn) answerHead(c *upConn, a *answerHead) (aborted bool) {
	up := fc.f.p.up
	fc.status = a.status
	bw := fc.bw
	writeStatusLine(bw, a.status)
	for line := range fieldLines(a.fields) {
		if name, _ := splitField(line); !hopByHop(name, a.connection) {
			bw.Write(line)
			bw.WriteString("\r\n")
		}
	}
	if !a.date {
		fc.writeDate(bw)
	}
	fc.endHead(bw)
	_, _ = c.br.Discard(a.size)
	body := io.LimitedReader{R: c.br, N: a.length}
	counted := countingWriter{w: bw}
	var flush func() error
	if a.stream {
		flush = bw.Flush
	}
	err := copyBody(&counted, &body, flush)
	fc.bytes = counted.n
	if err != nil || body.N > 0 {
		up.release(c, false)
		return true
	}
	up.release(c, !a.close)
	return bw.Flush() != nil
}

func (fc *frontConn) informational(resp *http.Response) {
	bw := fc.bw
	writeStatusLine(bw, resp.StatusCode)
	_ = resp.Header.Write(bw)
	bw.WriteString("\r\n")
	_ = bw.Flush()
}

func (fc *frontConn) fail(status int) {
	fc.writeError(status, proxyErrorBody(status))
}

// writeError writes a short plain-text answer.
func (fc *frontConn) writeError(status int, body string) {
	fc.status = status
	bw := fc.bw
	writeStatusLine(bw, status)
	bw.WriteString("Content-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n")
	fc.writeDate(bw)
	writeLength(bw, int64(len(body)))
	fc.endHead(bw)
	if fc.req.method != http.MethodHead {
		n, _ := bw.WriteString(body)
		fc.bytes = int64(n)
	}
	if bw.Flush() != nil {
		fc.close = true
	}
}

// endHead ends the answer's head, saying the connection closes after it
// when it does.
func (fc *frontConn) endHead(bw *bufio.Writer) {
	if fc.close || fc.f.closing.Load() {
		fc.close = true
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("\r\n")
}

// answer writes the endpoint's answer to the client: its header less
// the hop-by-hop fields, with its length, or chunked when it has none or
// has a trailer; the body is flushed at each read when it is streamed.
func (fc *frontConn) answer(c *upConn, resp *http.Response) (aborted bool) {
	up := fc.f.p.up
	fc.status = resp.StatusCode
	h := resp.Header
	removeHopByHop(h)
	noBody := fc.req.method == http.MethodHead || resp.StatusCode == http.StatusNoContent ||
		resp.StatusCode == http.StatusNotModified
	chunked := !noBody && (resp.ContentLength < 0 || len(resp.Trailer) > 0)
	if !noBody {
		delete(h, "Content-Length")
	}
	bw := fc.bw
	writeStatusLine(bw, resp.StatusCode)
	_ = h.Write(bw)
	if _, ok := h["Date"]; !ok {
		fc.writeDate(bw)
	}
	if len(resp.Trailer) > 0 {
		bw.WriteString("Trailer: ")
		bw.WriteString(trailerKeys(resp.Trailer))
		bw.WriteString("\r\n")
	}
	switch {
	case chunked:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case !noBody:
		writeLength(bw, resp.ContentLength)
	}
	fc.endHead(bw)
	if noBody {
		_ = resp.Body.Close()
		up.release(c, !resp.Close)
		return bw.Flush() != nil
	}
	var w io.Writer = bw
	var chunks io.WriteCloser
	if chunked {
		chunks = httputil.NewChunkedWriter(bw)
		w = chunks
	}
	counted := &countingWriter{w: w}
	var flush func() error
	if streamed(resp) {
		flush = bw.Flush
	}
	if err := copyBody(counted, resp.Body, flush); err != nil {
		fc.bytes = counted.n
		up.release(c, false)
		return true
	}
	fc.bytes = counted.n
	_ = resp.Body.Close() // at its end already: this reads the trailer in
	up.release(c, !resp.Close)
	if chunked {
		_ = chunks.Close() // the last chunk, which the trailer follows
		_ = resp.Trailer.Write(bw)
		bw.WriteString("\r\n")
	}
	return bw.Flush() != nil
}

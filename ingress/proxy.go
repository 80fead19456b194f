package ingress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// maxTries bounds the endpoints an idempotent request is tried on.
const maxTries = 3

// MaxRetryBody bounds the request body kept in memory so that an
// idempotent request (a PUT, a DELETE with a body) can be sent again to
// another endpoint, as nginx buffers a request body for
// proxy_next_upstream: a longer body is streamed to the first endpoint
// alone, and its request is not tried again.
const MaxRetryBody = 64 << 10

// Proxy is the reverse proxy: an http.Handler over the current table.
type Proxy struct {
	table     atomic.Pointer[Table]
	rr        atomic.Uint64
	up        *upstream
	transport http.RoundTripper
	proxy     *httputil.ReverseProxy
	metrics   *Metrics
	log       *slog.Logger
	clock     clock.PassiveClock
}

// routeKey carries the matched route from ServeHTTP to the transport.
type routeKey struct{}

// NewProxy returns a proxy with an empty table: every request answers
// 404 until SetTable.
func NewProxy(m *Metrics, log *slog.Logger, clk clock.PassiveClock) *Proxy {
	if log == nil {
		log = slog.Default()
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	p := &Proxy{metrics: m, log: log, clock: clk, up: newUpstream(clk)}
	p.SetTable(Build(Objects{}))
	p.transport = &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		// The client's Accept-Encoding goes through as it is; answers are
		// passed on as encoded, never decoded here.
		DisableCompression:    true,
		ResponseHeaderTimeout: 0,
		// Backends are spoken to in HTTP/1.1 (a custom dialer and no
		// TLS: the transport never tries HTTP/2 on them).
		ForceAttemptHTTP2: false,
	}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetXForwarded()
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "backend" // the transport picks the endpoint
			pr.Out.Host = pr.In.Host
		},
		Transport:    roundTripper(p.roundTrip),
		ErrorHandler: p.proxyError,
		// 0: answers of known length are written whole; the reverse
		// proxy flushes those without a length, and server-sent
		// events, at each write.
		FlushInterval: 0,
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		// A copy buffer from a pool, not 32 KiB made for each answer.
		BufferPool: bufferPool{},
	}
	return p
}

// SetTable swaps a new table in; requests in flight finish on the one
// they matched, connections stay open.
func (p *Proxy) SetTable(t *Table) {
	p.metrics.resolve(t)
	p.table.Store(t)
	keep := map[string]bool{}
	t.eachRoute(func(r *Route) {
		if r.Backend != nil {
			for _, a := range r.Backend.Addrs {
				keep[a] = true
			}
		}
	})
	p.up.retain(keep)
}

// CloseIdle closes the idle connections to endpoints.
func (p *Proxy) CloseIdle() {
	p.up.closeIdle()
	if t, ok := p.transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// Table is the table in use.
func (p *Proxy) Table() *Table { return p.table.Load() }

// copyBuffers are the reverse proxy's buffers for copying answers.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

type bufferPool struct{}

func (bufferPool) Get() []byte  { return *copyBuffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { copyBuffers.Put(&b) }

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// ServeHTTP routes one request and writes its access log line.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := p.clock.Now()
	route := p.table.Load().Match(r.Host, r.URL.Path, r.TLS != nil)
	st := &state{route: route, rec: recorder{ResponseWriter: w}}
	rw := &st.rec
	aborted := p.serve(rw, r, st)
	if aborted {
		// Logged and counted first; then the client's connection is cut,
		// as httputil.ReverseProxy cuts it, so that it sees the answer
		// is not whole.
		defer panic(http.ErrAbortHandler)
	}
	p.record(r.Context(), st, accessEntry{remote: r.RemoteAddr, host: r.Host, method: r.Method, uri: r.RequestURI,
		proto: r.Proto, status: rw.status, bytes: rw.bytes, elapsed: p.clock.Since(start)})
}

// serve answers r on its route: refused, through upstream, or through
// httputil.ReverseProxy. It says whether the answer was cut short.
func (p *Proxy) serve(rw *recorder, r *http.Request, st *state) (aborted bool) {
	if msg, status := st.route.refusal(); status != 0 {
		http.Error(rw, msg, status)
		return false
	}
	if len(st.route.Backend.Addrs) > 1 {
		if err := bufferBody(r); err != nil {
			http.Error(rw, "400 bad request: reading the request body: "+err.Error(), http.StatusBadRequest)
			return false
		}
	}
	if !direct(r) {
		p.proxy.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), routeKey{}, st)))
		return false
	}
	return p.forward(r.Context(), st, r.Method == http.MethodHead, idempotent(r),
		func(bw *bufio.Writer) error { return writeRequest(bw, r) }, recorderReply{p, rw})
}

// refusal is the answer to a request for r that no endpoint is asked
// for: 404 without a route, 503 for one without a backend to reach;
// status 0 for a route to forward.
func (r *Route) refusal() (msg string, status int) {
	switch {
	case r == nil:
		return "404 page not found: no Ingress rule matches", http.StatusNotFound
	case r.Unavailable != "":
		return "503 service unavailable: " + r.Unavailable, http.StatusServiceUnavailable
	case len(r.Backend.Addrs) == 0:
		return "503 service unavailable: no ready endpoints for " + r.Backend.Name, http.StatusServiceUnavailable
	}
	return "", 0
}

// accessEntry is what the access log says of a request besides its
// route and endpoint.
type accessEntry struct {
	remote, host, method, uri, proto string
	status                           int
	bytes                            int64
	elapsed                          time.Duration
}

// record counts a request in the metrics and writes its access log
// line.
func (p *Proxy) record(ctx context.Context, st *state, e accessEntry) {
	status := e.status
	if status == 0 {
		status = http.StatusOK
	}
	p.metrics.seriesOf(st.route).observe(status, e.elapsed)
	if !p.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	ing, backend := "", ""
	if st.route != nil {
		ing = st.route.ref
		if st.route.Backend != nil {
			backend = st.route.Backend.Name
		}
	}
	p.log.LogAttrs(ctx, slog.LevelInfo, "ingress request",
		slog.String("remote", e.remote), slog.String("host", e.host), slog.String("method", e.method),
		slog.String("uri", e.uri), slog.String("proto", e.proto), slog.Int("status", status),
		slog.Int64("bytes", e.bytes), slog.Duration("duration", e.elapsed), slog.String("ingress", ing),
		slog.String("backend", backend), slog.String("upstream", st.upstream), slog.Int("tries", st.tries))
}

// state is what one request's trip through the proxy records.
type state struct {
	route    *Route
	rec      recorder
	upstream string
	tries    int
}

// idempotentMethod tells whether RFC 9110 calls method idempotent; a
// POST or PATCH is never sent twice.
func idempotentMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// idempotent tells whether a request may be sent again after a failed
// try: an idempotent method, with no body to replay or one that can be
// had again.
func idempotent(r *http.Request) bool {
	return idempotentMethod(r.Method) && (r.Body == nil || r.Body == http.NoBody || r.GetBody != nil)
}

// bufferBody reads the body of an idempotent request into memory, when
// it is at most MaxRetryBody long, and gives the request a GetBody that
// replays it. A longer one is left to stream: what was read of it goes
// first, the rest after, and the request is tried once. An error is the
// client's: its body could not be read.
func bufferBody(r *http.Request) error {
	if !idempotentMethod(r.Method) || r.Body == nil || r.Body == http.NoBody || r.GetBody != nil || r.ContentLength > MaxRetryBody {
		return nil
	}
	size := MaxRetryBody + 1
	if r.ContentLength >= 0 {
		size = int(r.ContentLength) + 1 // the +1 sees the end
	}
	buf := make([]byte, 0, min(size, 4<<10))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cap(buf), size-len(buf)))
		}
		n, err := r.Body.Read(buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			body := r.Body
			_ = body.Close()
			// Sent with its length now known, as nginx sends a body it
			// buffered.
			r.ContentLength, r.TransferEncoding = int64(len(buf)), nil
			r.Body = io.NopCloser(bytes.NewReader(buf))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
			return nil
		}
		if err != nil {
			return err
		}
	}
	// Longer than MaxRetryBody: sent once, as it comes.
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
	return nil
}

// attempts is where a request to n endpoints starts in the round robin
// and how many it may try: one, or for one that may be sent again
// (replay: idempotent, its body in hand) up to maxTries of them, each
// on the next endpoint.
func (p *Proxy) attempts(replay bool, n int) (start, tries int) {
	tries = 1
	if replay {
		tries = min(maxTries, n)
	}
	return int(p.rr.Add(1)), tries
}

// roundTrip sends the request to one endpoint of the route's backend,
// round robin; an idempotent request that fails before any response is
// tried on the next endpoints.
func (p *Proxy) roundTrip(r *http.Request) (*http.Response, error) {
	st, _ := r.Context().Value(routeKey{}).(*state)
	if st == nil || st.route == nil || st.route.Backend == nil {
		return nil, errors.New("ingress: no route")
	}
	addrs := st.route.Backend.Addrs
	start, tries := p.attempts(idempotent(r), len(addrs))
	var err error
	for i := 0; i < tries; i++ {
		addr := addrs[(start+i)%len(addrs)]
		out := r
		if i > 0 {
			out = r.Clone(r.Context())
			if r.GetBody != nil {
				if out.Body, err = r.GetBody(); err != nil {
					return nil, err
				}
			}
		}
		out.URL.Host = addr
		st.upstream, st.tries = addr, i+1
		var resp *http.Response
		resp, err = p.transport.RoundTrip(out)
		if err == nil {
			return resp, nil
		}
		p.metrics.seriesOf(st.route).upstreamError()
		if r.Context().Err() != nil {
			break
		}
	}
	return nil, err
}

// proxyError answers a request httputil.ReverseProxy could not send.
func (p *Proxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	p.log.Debug("ingress upstream error", "uri", r.RequestURI, "err", err)
	writeProxyError(w, errorStatus(err))
}

// errorStatus is the answer to a request no endpoint could take: 502,
// 504 when it timed out, nginx's 499 when the client went away.
func errorStatus(err error) int {
	if errors.Is(err, context.Canceled) {
		return 499
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// proxyErrorBody is the body of an answer with errorStatus's status.
func proxyErrorBody(status int) string {
	return strconv.Itoa(status) + " " + http.StatusText(status) + ": upstream unreachable\n"
}

func writeProxyError(w http.ResponseWriter, status int) {
	w.WriteHeader(status)
	_, _ = io.WriteString(w, proxyErrorBody(status))
}

// recorder notes the status and size of an answer, for the access log
// and the metrics; it passes Flush and Hijack (WebSockets) through.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	// An informational answer goes before the final one, which is
	// the one logged.
	if r.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush passes through, for the reverse proxy's immediate flushes.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

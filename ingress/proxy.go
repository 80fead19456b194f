package ingress

import (
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
	aborted := false
	switch {
	case route == nil:
		http.Error(rw, "404 page not found: no Ingress rule matches", http.StatusNotFound)
	case route.Unavailable != "":
		http.Error(rw, "503 service unavailable: "+route.Unavailable, http.StatusServiceUnavailable)
	case len(route.Backend.Addrs) == 0:
		http.Error(rw, "503 service unavailable: no ready endpoints for "+route.Backend.Name, http.StatusServiceUnavailable)
	default:
		if len(route.Backend.Addrs) > 1 {
			if err := bufferBody(r); err != nil {
				http.Error(rw, "400 bad request: reading the request body: "+err.Error(), http.StatusBadRequest)
				break
			}
		}
		if direct(r) {
			aborted = p.forward(rw, r, st)
			break
		}
		p.proxy.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), routeKey{}, st)))
	}
	if aborted {
		// Logged and counted first; then the client's connection is cut,
		// as httputil.ReverseProxy cuts it, so that it sees the answer
		// is not whole.
		defer panic(http.ErrAbortHandler)
	}
	elapsed := p.clock.Since(start)
	status := rw.status
	if status == 0 {
		status = http.StatusOK
	}
	p.metrics.seriesOf(route).observe(status, elapsed)
	if !p.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	ing, backend := "", ""
	if route != nil {
		ing = route.ref
		if route.Backend != nil {
			backend = route.Backend.Name
		}
	}
	p.log.LogAttrs(r.Context(), slog.LevelInfo, "ingress request",
		slog.String("remote", r.RemoteAddr), slog.String("host", r.Host), slog.String("method", r.Method),
		slog.String("uri", r.RequestURI), slog.String("proto", r.Proto), slog.Int("status", status),
		slog.Int64("bytes", rw.bytes), slog.Duration("duration", elapsed), slog.String("ingress", ing),
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
// and how many it may try: one, or for an idempotent request up to
// maxTries of them, each on the next endpoint.
func (p *Proxy) attempts(r *http.Request, n int) (start, tries int) {
	tries = 1
	if idempotent(r) {
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
	start, tries := p.attempts(r, len(addrs))
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

// proxyError answers a request no endpoint could take: 502, or 504 when
// it timed out.
func (p *Proxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusBadGateway
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		status = http.StatusGatewayTimeout
	}
	if errors.Is(err, context.Canceled) {
		// The client went away; nginx's 499.
		status = 499
	}
	p.log.Debug("ingress upstream error", "uri", r.RequestURI, "err", err)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, strconv.Itoa(status)+" "+http.StatusText(status)+": upstream unreachable\n")
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

package ingress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// direct tells whether upstream takes r: an HTTP request with its body
// in hand (none, or buffered for a retry), that does not ask to switch
// protocols or to be told to continue. The others (WebSockets, streamed
// bodies) go through httputil.ReverseProxy.
func direct(r *http.Request) bool {
	if r.Method == http.MethodConnect || len(r.Header["Upgrade"]) > 0 || len(r.Header["Expect"]) > 0 {
		return false
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return true
	}
	return r.GetBody != nil && r.ContentLength > 0
}

// replier is how forward answers the client: through net/http's
// ResponseWriter (recorderReply) or on the front's own connection.
type replier interface {
	// relay reads the endpoint's answer from c and writes it to the
	// client, handing c back. An error is the endpoint's, before its
	// answer began: the caller closes c and may try the next endpoint.
	// aborted says the answer was cut short after its header went out.
	relay(c *upConn, head bool) (aborted bool, err error)
	// fail answers a request no endpoint answered, with status.
	fail(status int)
}

// forward sends a request to the route's endpoints over upstream and
// has to answer it, as httputil.ReverseProxy with the proxy's Rewrite
// would: round robin, a request that may be sent twice (replay) tried
// on the next endpoints when one fails before answering. write writes
// the request; head says it is a HEAD, whose answer has no body. It
// says whether the answer was cut short after its header went out,
// which the caller turns into an aborted connection once the request
// is logged.
func (p *Proxy) forward(ctx context.Context, st *state, head, replay bool, write func(*bufio.Writer) error, to replier) (aborted bool) {
	addrs := st.route.Backend.Addrs
	start, tries := p.attempts(replay, len(addrs))
	var err error
	for i := range tries {
		addr := addrs[(start+i)%len(addrs)]
		st.upstream, st.tries = addr, i+1
		var c *upConn
		if c, err = p.up.send(ctx, addr, write, replay); err == nil {
			if aborted, err = to.relay(c, head); err == nil {
				return aborted
			}
			p.up.release(c, false)
		}
		p.metrics.seriesOf(st.route).upstreamError()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
			break
		}
	}
	p.log.Debug("ingress upstream error", "upstream", st.upstream, "err", err)
	to.fail(errorStatus(err))
	return false
}

// The requests readResponse is told an answer is for: only a HEAD's
// answer is read differently, without a body.
var (
	headRequest  = &http.Request{Method: http.MethodHead}
	otherRequest = &http.Request{Method: http.MethodGet}
)

// readFinal reads the answer, passing informational (1xx) ones on to
// the client as they come.
func readFinal(c *upConn, head bool, informational func(*http.Response)) (*http.Response, error) {
	req := otherRequest
	if head {
		req = headRequest
	}
	for n := 0; ; n++ {
		resp, err := c.readResponse(req)
		if err != nil {
			return nil, err
		}
		code := resp.StatusCode
		if code == http.StatusSwitchingProtocols {
			return nil, errors.New("ingress: upstream switched protocols unasked")
		}
		if code >= 200 {
			return resp, nil
		}
		if n == max1xx {
			return nil, errors.New("ingress: too many 1xx answers from upstream")
		}
		informational(resp)
	}
}

// recorderReply answers through net/http's ResponseWriter.
type recorderReply struct {
	p *Proxy
	w *recorder
}

func (rr recorderReply) informational(resp *http.Response) {
	h := rr.w.Header()
	copyHeader(h, resp.Header)
	rr.w.WriteHeader(resp.StatusCode)
	clear(h)
}

func (rr recorderReply) fail(status int) { writeProxyError(rr.w, status) }

func (rr recorderReply) relay(c *upConn, head bool) (aborted bool, err error) {
	resp, err := readFinal(c, head, rr.informational)
	if err != nil {
		return false, err
	}
	return rr.answer(c, resp), nil
}

// answer writes the answer's header and copies its body, flushing at
// each write when it has no length or is an event stream, and hands the
// connection back.
func (rr recorderReply) answer(c *upConn, resp *http.Response) (aborted bool) {
	w := rr.w
	removeHopByHop(resp.Header)
	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	announced := len(resp.Trailer)
	if announced > 0 {
		h.Add("Trailer", trailerKeys(resp.Trailer))
	}
	w.WriteHeader(resp.StatusCode)
	var flush func() error
	if streamed(resp) {
		flush = func() error { w.Flush(); return nil }
	}
	if err := copyBody(w, resp.Body, flush); err != nil {
		rr.p.up.release(c, false)
		return true
	}
	_ = resp.Body.Close() // at its end already: this reads the trailer in
	rr.p.up.release(c, !resp.Close)
	if len(resp.Trailer) > 0 {
		// Chunked, so that the trailer can follow.
		w.Flush()
	}
	if len(resp.Trailer) == announced {
		copyHeader(h, resp.Trailer)
		return false
	}
	for k, vv := range resp.Trailer {
		for _, v := range vv {
			h.Add(http.TrailerPrefix+k, v)
		}
	}
	return false
}

// trailerKeys is the Trailer header announcing trailer's fields.
func trailerKeys(trailer http.Header) string {
	keys := make([]string, 0, len(trailer))
	for k := range trailer {
		keys = append(keys, k)
	}
	return strings.Join(keys, ", ")
}

// streamed tells whether an answer is passed on as it comes, as
// httputil.ReverseProxy does: server-sent events and answers without a
// length.
func streamed(resp *http.Response) bool {
	return resp.ContentLength == -1 || eventStream(resp.Header.Get("Content-Type"))
}

// eventStream tells whether a Content-Type is text/event-stream: the
// media type alone, without mime.ParseMediaType's map of parameters
// for every answer.
func eventStream(ct string) bool {
	const sse = "text/event-stream"
	if len(ct) < len(sse) || !strings.EqualFold(ct[:len(sse)], sse) {
		return false
	}
	rest := strings.TrimLeft(ct[len(sse):], " \t")
	return rest == "" || rest[0] == ';'
}

// copyBody copies an answer's body to the client through a pooled
// buffer, calling flush after each write when it is not nil. An error
// is the endpoint's or the client's: either way the answer is cut.
func copyBody(w io.Writer, body io.Reader, flush func() error) error {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			if flush != nil {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

func copyHeader(dst, src http.Header) {
	for k, vv := range src {
		for _, v := range vv {
			dst.Add(k, v)
		}
	}
}

// hopHeaders are the hop-by-hop headers (RFC 9110 section 7.6.1) that
// a proxy does not pass on, as httputil.ReverseProxy lists them.
var hopHeaders = [...]string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// hopHeader tells whether k, a canonical header key, is hop-by-hop.
func hopHeader(k string) bool { return slices.Contains(hopHeaders[:], k) }

// removeHopByHop removes the hop-by-hop headers and those the
// Connection header names.
func removeHopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for k := range h {
		if hopHeader(k) {
			delete(h, k)
		}
	}
}

// writeRequest writes r as the proxy passes it on: its method, path and
// query (the query cleaned of what cannot be parsed), its Host, its
// headers less the hop-by-hop ones and the client's forwarding headers,
// X-Forwarded-For, -Host and -Proto as httputil.ProxyRequest's
// SetXForwarded sets them, and its body of known length.
func writeRequest(bw *bufio.Writer, r *http.Request) error {
	u := r.URL
	if q := cleanQueryParams(u.RawQuery); q != u.RawQuery {
		u2 := *u
		u2.RawQuery = q
		u = &u2
	}
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	bw.WriteString(u.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(r.Host)
	bw.WriteString("\r\n")
	conn := r.Header["Connection"]
	for k, vv := range r.Header {
		switch {
		case hopHeader(k), k == "Host", k == "Content-Length",
			k == "Forwarded", k == "X-Forwarded-For", k == "X-Forwarded-Host", k == "X-Forwarded-Proto":
			continue
		case len(conn) > 0 && httpguts.HeaderValuesContainsToken(conn, k):
			continue
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	if httpguts.HeaderValuesContainsToken(r.Header["Te"], "trailers") {
		bw.WriteString("Te: trailers\r\n")
	}
	if clientIP, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		bw.WriteString("X-Forwarded-For: ")
		bw.WriteString(clientIP)
		bw.WriteString("\r\n")
	}
	bw.WriteString("X-Forwarded-Host: ")
	bw.WriteString(r.Host)
	if r.TLS == nil {
		bw.WriteString("\r\nX-Forwarded-Proto: http\r\n")
	} else {
		bw.WriteString("\r\nX-Forwarded-Proto: https\r\n")
	}
	var body io.ReadCloser
	switch {
	case r.ContentLength > 0 && r.GetBody != nil:
		var err error
		if body, err = r.GetBody(); err != nil {
			return err
		}
		defer body.Close()
		fallthrough
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch:
		// As http.Transport sends a length, 0 too, for these methods.
		writeLength(bw, max(r.ContentLength, 0))
	}
	_, err := bw.WriteString("\r\n")
	if err == nil && body != nil {
		_, err = io.Copy(bw, body)
	}
	return err
}

// cleanQueryParams drops what url.ParseQuery cannot parse from a query,
// as httputil.ReverseProxy does before a Rewrite.
func cleanQueryParams(s string) string {
	reencode := func(s string) string {
		v, _ := url.ParseQuery(s)
		return v.Encode()
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case ';':
			return reencode(s)
		case '%':
			if i+2 >= len(s) || !ishex(s[i+1]) || !ishex(s[i+2]) {
				return reencode(s)
			}
			i += 3
		default:
			i++
		}
	}
	return s
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

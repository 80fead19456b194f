package ingress

import (
	"bufio"
	"bytes"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/net/http/httpguts"
)

// request is a request's head as the front parsed it. Its strings are
// its own; fields is the head's header lines, in the front's buffer.
type request struct {
	method string
	// uri is the request target as sent, for the access log; target is
	// what is sent on: its query cleaned as httputil.ReverseProxy cleans
	// it, its path escaped as net/url escapes it.
	uri, target string
	// path is the target's path, unescaped, for routing.
	path          string
	host          string
	contentLength int64
	// close: the client asked for the connection to end after the
	// answer. teTrailers: it takes trailers.
	close, teTrailers bool
	fields            []byte
	// connection are the values of the Connection fields: the fields
	// they name are not sent on.
	connection [][]byte
}

// parse reads head, a request's head ending in an empty line, into r;
// errHandOff for one the front leaves to net/http: any but HTTP/1.1, an
// origin-form target and exactly one Host, no Transfer-Encoding,
// Upgrade or Expect, a length of at most MaxRetryBody, every line
// ending in CRLF, no folded lines, and nothing net/http would refuse.
func (r *request) parse(head []byte) error {
	*r = request{connection: r.connection[:0]}
	eol := bytes.Index(head, crlf)
	line := head[:eol]
	r.fields = head[eol+2 : len(head)-2]
	method, rest, ok := bytes.Cut(line, sp)
	if !ok {
		return errHandOff
	}
	target, proto, ok := bytes.Cut(rest, sp)
	if !ok || string(proto) != "HTTP/1.1" || !validToken(method) {
		return errHandOff
	}
	r.method = internMethod(method)
	if r.method == http.MethodConnect || r.method == "PRI" {
		return errHandOff
	}
	if err := r.parseTarget(target); err != nil {
		return err
	}
	seenHost, seenLength := false, false
	for name, value := range plainFields(r.fields) {
		if name == nil {
			return errHandOff
		}
		switch {
		case fieldIs(name, "Host"):
			if seenHost {
				return errHandOff
			}
			seenHost = true
			r.host = string(value)
			if !httpguts.ValidHostHeader(r.host) {
				return errHandOff
			}
		case fieldIs(name, "Content-Length"):
			n, ok := parseLength(value, MaxRetryBody)
			if seenLength || !ok {
				return errHandOff
			}
			seenLength = true
			r.contentLength = n
		case fieldIs(name, "Transfer-Encoding"), fieldIs(name, "Upgrade"), fieldIs(name, "Expect"):
			return errHandOff
		case fieldIs(name, "Connection"):
			r.close = connectionField(value, &r.connection) || r.close
		case fieldIs(name, "Te"):
			if containsToken(value, "trailers") {
				r.teTrailers = true
			}
		}
	}
	if !seenHost {
		return errHandOff
	}
	return nil
}

// parseLength parses a Content-Length of at most limit.
func parseLength(v []byte, limit uint64) (int64, bool) {
	n, err := strconv.ParseUint(string(v), 10, 63)
	return int64(n), err == nil && n <= limit
}

var (
	crlf = []byte("\r\n")
	sp   = []byte(" ")
)

// parseTarget sets uri, target and path from an origin-form target.
func (r *request) parseTarget(target []byte) error {
	if len(target) == 0 || target[0] != '/' {
		return errHandOff
	}
	plain := true // the path is as net/url escapes it, and unescaped
	inQuery := false
	for _, c := range target {
		switch {
		case c <= ' ' || c >= 0x7f || c == '#':
			return errHandOff
		case c == '?':
			inQuery = true
		case !inQuery && !pathByte(c):
			plain = false
		}
	}
	r.uri = string(target)
	path, query, hasQuery := strings.Cut(r.uri, "?")
	escaped := path
	if plain {
		r.path = path
	} else {
		u, err := url.ParseRequestURI(r.uri)
		if err != nil {
			return errHandOff
		}
		r.path, escaped = u.Path, u.EscapedPath()
	}
	clean := cleanQueryParams(query)
	switch {
	case plain && clean == query:
		r.target = r.uri
	case clean != "" || hasQuery && query == "":
		r.target = escaped + "?" + clean
	default:
		r.target = escaped
	}
	return nil
}

// pathByte tells whether c stands for itself in a path as net/url
// writes it (url.URL.EscapedPath): RFC 3986's pchar less '%', and '/'.
func pathByte(c byte) bool {
	if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '[', ']', '/':
		return true
	}
	return false
}

// fieldLines are the lines of a head's fields, without their CRLF;
// fields ends in CRLF.
func fieldLines(fields []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for rest := fields; len(rest) > 0; {
			i := bytes.Index(rest, crlf)
			if !yield(rest[:i]) {
				return
			}
			rest = rest[i+2:]
		}
	}
}

// plainFields are the fields of a head's field block, name and value
// trimmed; a line folded or malformed (one net/http may read otherwise
// or refuse) yields a nil name, and is the last.
func plainFields(block []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(name, value []byte) bool) {
		for line := range fieldLines(block) {
			var name, value []byte
			if line[0] != ' ' && line[0] != '\t' {
				if name, value = splitField(line); name != nil && (!validToken(name) || !validValue(value)) {
					name = nil
				}
			}
			if !yield(name, value) || name == nil {
				return
			}
		}
	}
}

// connectionField keeps a Connection field's value, whose tokens name
// the fields not passed on, and says whether it asks for the
// connection to close.
func connectionField(value []byte, values *[][]byte) (close bool) {
	*values = append(*values, value)
	return containsToken(value, "close")
}

// dropped tells whether a field of the client's request is not sent
// on: a hop-by-hop one, one its Connection names, one the proxy sets
// itself.
func (r *request) dropped(name []byte) bool {
	for _, k := range [...]string{"Host", "Content-Length", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if fieldIs(name, k) {
			return true
		}
	}
	return hopByHop(name, r.connection)
}

// hopByHop tells whether a field is not passed on by a proxy: one of
// hopHeaders, in any case, or one the Connection fields (connection,
// their values) name.
func hopByHop(name []byte, connection [][]byte) bool {
	for _, k := range hopHeaders {
		if fieldIs(name, k) {
			return true
		}
	}
	for _, v := range connection {
		if containsToken(v, string(name)) {
			return true
		}
	}
	return false
}

// answerHead is an endpoint's answer as the front passes it on without
// net/http: a final one, of known length or none, whose fields go
// through as they came, less the hop-by-hop ones.
type answerHead struct {
	status int
	// size is the head's, in the connection's buffer; length the body's.
	size   int
	length int64
	fields []byte
	// close: the endpoint ends the connection after it. date: it has a
	// Date. stream: it is server-sent events, flushed at each read.
	close, date, stream bool
	connection          [][]byte
}

// parse reads head, the head of an answer to a HEAD request or not,
// into a; false for one left to net/http's ReadResponse: any but
// HTTP/1.1, an informational one, one chunked, with a trailer, without
// a length, or anything ReadResponse might read otherwise.
func (a *answerHead) parse(head []byte, isHead bool) bool {
	*a = answerHead{size: len(head), length: -1, connection: a.connection[:0]}
	eol := bytes.Index(head, crlf)
	line := head[:eol]
	a.fields = head[eol+2 : len(head)-2]
	if len(line) < 12 || string(line[:9]) != "HTTP/1.1 " || len(line) > 12 && line[12] != ' ' {
		return false
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return false
		}
		a.status = a.status*10 + int(c-'0')
	}
	if a.status < 200 {
		return false
	}
	seenType := false
	for name, value := range plainFields(a.fields) {
		if name == nil {
			return false
		}
		switch {
		case fieldIs(name, "Content-Length"):
			n, ok := parseLength(value, 1<<50)
			if a.length >= 0 || !ok {
				return false
			}
			a.length = n
		case fieldIs(name, "Transfer-Encoding"), fieldIs(name, "Trailer"):
			return false
		case fieldIs(name, "Connection"):
			a.close = connectionField(value, &a.connection) || a.close
		case fieldIs(name, "Date"):
			a.date = true
		case fieldIs(name, "Content-Type"):
			if !seenType {
				seenType = true
				a.stream = eventStream(string(value))
			}
		}
	}
	if isHead || a.status == http.StatusNoContent || a.status == http.StatusNotModified {
		a.length = 0 // a length it has describes another answer's body
		return true
	}
	return a.length >= 0
}

// peekHead waits until the head at the start of br is all in its
// buffer and says how long it is; ok is false when it has a bare LF or
// does not fit. partial is called once, when part of it is in.
func peekHead(br *bufio.Reader, partial func()) (end int, ok bool, err error) {
	searched := 0
	for {
		buf, _ := br.Peek(br.Buffered())
		end, bare := headEnd(buf, searched)
		switch {
		case bare:
			return 0, false, nil
		case end > 0:
			return end, true, nil
		case len(buf) == br.Size():
			return 0, false, nil
		}
		searched = max(0, len(buf)-3)
		if len(buf) > 0 && partial != nil {
			partial()
			partial = nil
		}
		if _, err := br.Peek(len(buf) + 1); err != nil {
			return 0, false, err
		}
	}
}

// splitField splits a header line at its colon, the value trimmed of
// blanks; name is nil without a colon.
func splitField(line []byte) (name, value []byte) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return nil, nil
	}
	return line[:i], bytes.Trim(line[i+1:], " \t")
}

// fieldIs compares a field name, as HTTP does, regardless of case.
func fieldIs(name []byte, k string) bool {
	if len(name) != len(k) {
		return false
	}
	for i := range len(k) {
		if lower(name[i]) != lower(k[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// containsToken tells whether a comma-separated field value has token,
// regardless of case, as httpguts.HeaderValuesContainsToken does.
func containsToken(value []byte, token string) bool {
	for len(value) > 0 {
		var t []byte
		t, value, _ = bytes.Cut(value, []byte(","))
		if fieldIs(bytes.Trim(t, " \t"), token) {
			return true
		}
	}
	return false
}

// validToken tells whether b is an RFC 9110 token, as net/http checks a
// method and a field name.
func validToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !httpguts.IsTokenRune(rune(c)) {
			return false
		}
	}
	return true
}

// validValue tells whether b is a field value net/http takes: no
// control bytes but tab.
func validValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// internMethod is method as a string, the common ones without an
// allocation.
func internMethod(m []byte) string {
	for _, k := range [...]string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodDelete, http.MethodPatch, http.MethodOptions, http.MethodConnect, http.MethodTrace} {
		if string(m) == k {
			return k
		}
	}
	return string(m)
}

// writeLength writes a Content-Length field.
func writeLength(bw *bufio.Writer, n int64) {
	bw.WriteString("Content-Length: ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), n, 10))
	bw.WriteString("\r\n")
}

// writeStatusLine writes an answer's status line, as net/http writes it.
func writeStatusLine(bw *bufio.Writer, code int) {
	bw.WriteString("HTTP/1.1 ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(code), 10))
	bw.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		bw.WriteString(text)
	} else {
		bw.WriteString("status code ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(code), 10))
	}
	bw.WriteString("\r\n")
}

// dateField is the Date field of the second it was made for.
type dateField struct {
	unix int64
	line []byte
}

var lastDate atomic.Pointer[dateField]

// writeDate writes the Date field net/http's server adds to an answer,
// made once a second.
func (fc *frontConn) writeDate(bw *bufio.Writer) {
	now := fc.f.p.clock.Now()
	d := lastDate.Load()
	if d == nil || d.unix != now.Unix() {
		d = &dateField{unix: now.Unix(), line: now.UTC().AppendFormat([]byte("Date: "), http.TimeFormat)}
		d.line = append(d.line, "\r\n"...)
		lastDate.Store(d)
	}
	bw.Write(d.line)
}

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
)

// DefaultTimeout bounds a request that is not a watch.
const DefaultTimeout = 30 * time.Second

// Client talks to one API server as one identity. It is safe for
// concurrent use; keep one per identity and share it.
type Client struct {
	// bases are the control planes' URLs; current indexes the one the
	// client sends to, shared with the clients WithTimeout makes.
	bases   []*url.URL
	current *atomic.Int32
	// failed holds, for each of bases, when it last gave no answer
	// (unix nanoseconds on clock, 0 for not since it last answered),
	// also shared: the client moves on past it (see next).
	failed    []atomic.Int64
	token     string
	http      *http.Client
	timeout   time.Duration
	userAgent string
	clock     clock.Clock
	// once: a 503 or 429 is returned, not waited out and sent again.
	once bool
}

// New makes a client. Its transport keeps connections alive and speaks
// HTTP/2 over TLS, so that watches and requests share a few connections;
// it pings idle HTTP/2 connections, so that a dead server is noticed
// even on a quiet watch.
func New(cfg *Config) (*Client, error) {
	bases, err := ParseServers(cfg.Server)
	if err != nil {
		return nil, err
	}
	c := &Client{bases: bases, current: new(atomic.Int32), failed: make([]atomic.Int64, len(bases)), token: cfg.Token, timeout: cfg.Timeout, userAgent: cfg.UserAgent, clock: cfg.Clock}
	if cfg.Spread && len(bases) > 1 {
		c.current.Store(int32(rand.IntN(len(bases))))
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.userAgent == "" {
		c.userAgent = "berth-client"
	}
	tr := cfg.Transport
	if tr == nil {
		if tr, err = NewTransport(cfg); err != nil {
			return nil, err
		}
	}
	c.http = &http.Client{Transport: tr}
	return c, nil
}

// ParseServers reads Config.Server: one URL, or several separated by
// commas.
func ParseServers(v string) ([]*url.URL, error) {
	var out []*url.URL
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return nil, fmt.Errorf("client: server %q is not an http(s) URL", s)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		out = append(out, u)
	}
	return out, nil
}

// Server is the URL of the control plane the client sends to now.
func (c *Client) Server() string { return c.bases[c.current.Load()].String() }

// WithTimeout is the client with another bound on its requests (see
// Config.Timeout), sharing its connections and its choice of control
// plane: the agent's heartbeat is bounded by its period, as the kubelet's
// is, so that a control plane that stopped answering costs one beat.
func (c *Client) WithTimeout(d time.Duration) *Client {
	cc := *c
	cc.timeout = d
	return &cc
}

// sendOnce is the client that returns a 503 or 429 rather than send the
// request again: for the informer, which backs off on its own clock.
func (c *Client) sendOnce() *Client {
	cc := *c
	cc.once = true
	return &cc
}

// NewTransport builds the transport New uses, for callers that share one
// among many clients (Config.Transport).
func NewTransport(cfg *Config) (*http.Transport, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipTLSVerify} //nolint:gosec // only when asked
	if len(cfg.CAData) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CAData) {
			return nil, errors.New("client: the CA data holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	if len(cfg.CertData) > 0 || len(cfg.KeyData) > 0 {
		cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
		if err != nil {
			return nil, fmt.Errorf("client: the client certificate: %w", err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 30 * time.Second,
			PingTimeout:     15 * time.Second,
		},
	}, nil
}

// ResourcePath is the API path of a kind's collection in a namespace (all
// namespaces when namespace is empty), of one object when name is set, and
// of its subresource when subresource is set.
func ResourcePath(k *api.Kind, namespace, name, subresource string) string {
	var b strings.Builder
	if k.GVK.Group == "" {
		b.WriteString("/api/" + k.GVK.Version)
	} else {
		b.WriteString("/apis/" + k.GVK.Group + "/" + k.GVK.Version)
	}
	if k.Namespaced && namespace != "" {
		b.WriteString("/namespaces/" + url.PathEscape(namespace))
	}
	b.WriteString("/" + k.Resource)
	if name != "" {
		b.WriteString("/" + url.PathEscape(name))
		if subresource != "" {
			b.WriteString("/" + subresource)
		}
	}
	return b.String()
}

// request is one API call.
type request struct {
	method      string
	path        string
	query       url.Values
	body        []byte
	contentType string
	// stream: no timeout, the caller reads and closes the body.
	stream bool
	// create: a POST that makes an object, which a 503 or 429 (not
	// made) may send again: at worst it then meets itself, AlreadyExists.
	create bool
	// accept is the Accept header, application/json when empty.
	accept string
}

// Do sends a request to path (with query and body, nil for none) and
// returns the response, its body unread, for paths this package does not
// wrap (logs, node join). A status of 300 or more is returned as a
// *apierrors.StatusError, the body closed. The caller closes the body of a
// successful response; ctx bounds the whole exchange. The body is a byte
// slice, not a reader, because a request that meets a closing connection
// is sent again.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) (*http.Response, error) {
	return c.send(ctx, &request{method: method, path: path, query: query, body: body, contentType: contentType, stream: true})
}

func (c *Client) send(ctx context.Context, r *request) (*http.Response, error) {
	start := c.clock.Now()
	backoff := minBackoff
	// refused counts the control planes that answered 503 in a row:
	// the Retry-After is waited out once each has.
	refused := 0
	for {
		resp, err := c.sendAny(ctx, r)
		if err == nil {
			return resp, nil
		}
		wait, ok := retryAfter(err, r)
		if !ok || c.once {
			return nil, err
		}
		if len(c.bases) > 1 && Code(err) == http.StatusServiceUnavailable {
			refused++
		} else {
			refused = 0
		}
		if refused > 0 && refused < len(c.bases) {
			// Another control plane may know a leader this one does
			// not (a leader that resigned as it stops answers 503
			// to what it still gets): it is asked at once. A 429
			// (too many requests) is waited out.
			wait = 0
		} else {
			refused = 0
			if wait <= 0 {
				wait = backoff
			}
			backoff = min(2*backoff, maxBackoff)
		}
		if !c.withinBudget(ctx, start, wait) {
			return nil, err
		}
		if len(c.bases) > 1 {
			at := c.current.Load()
			c.current.CompareAndSwap(at, c.next(at))
		}
		if wait == 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-c.clock.After(wait):
		}
	}
}

// The back-off between the tries of a read the server answered 504.
const (
	minBackoff = 200 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// withinBudget says whether a wait of d, and a try after it, still fits
// the request's time: its context's deadline, or without one the
// client's timeout from start.
func (c *Client) withinBudget(ctx context.Context, start time.Time, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl) > d
	}
	return c.timeout > 0 && c.clock.Since(start)+d < c.timeout
}

// retryAfter says whether a request that failed with err may be sent
// again, and after how long (0: the client's back-off). A 503 or 429
// with a Retry-After is a request the server did not carry out and asks
// to have again (the leader is changing hands, or too many are in
// flight): a read, an idempotent write (PUT, DELETE) and a create are
// sent again. A 503 without one (a node gone, a proxy's backend down) is
// an answer, as client-go takes it, and comes back at once. A 504 is an
// outcome the server does not know (a forwarded write cut off after it
// was sent): only a read is sent again; a create may have been made, and
// must not be made twice.
func retryAfter(err error, r *request) (time.Duration, bool) {
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		return 0, false
	}
	read := r.method == http.MethodGet || r.method == http.MethodHead || r.method == http.MethodOptions
	switch se.ErrStatus.Code {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		if !read && !r.create && r.method != http.MethodPut && r.method != http.MethodDelete {
			return 0, false
		}
	case http.StatusGatewayTimeout:
		if !read {
			return 0, false
		}
	default:
		return 0, false
	}
	var d time.Duration
	if se.ErrStatus.Details != nil && se.ErrStatus.Details.RetryAfterSeconds > 0 {
		d = time.Duration(se.ErrStatus.Details.RetryAfterSeconds) * time.Second
	}
	if d == 0 && se.ErrStatus.Code != http.StatusGatewayTimeout {
		return 0, false
	}
	return d, true
}

// sendAny sends a request to the current control plane, or the next ones
// while it cannot be reached.
func (c *Client) sendAny(ctx context.Context, r *request) (*http.Response, error) {
	// Each control plane once at most, starting with the current one,
	// while the one tried cannot be reached.
	at := c.current.Load()
	for tried := 1; ; tried++ {
		resp, err := c.sendTo(ctx, c.bases[at], r)
		var answer *apierrors.StatusError
		if (err == nil || errors.As(err, &answer)) && c.failed[at].Load() != 0 {
			c.failed[at].Store(0)
		}
		if err == nil || len(c.bases) == 1 {
			return resp, err
		}
		if tried < len(c.bases) && ctx.Err() == nil && unreachable(err, r.method) {
			c.failed[at].Store(c.clock.Now().UnixNano())
			next := c.next(at)
			c.current.CompareAndSwap(at, next)
			at = next
			continue
		}
		if errors.Is(err, context.DeadlineExceeded) {
			// No answer in time: the control plane may be stopped or
			// cut off with its connections open, which no dial or
			// lost connection tells for a while. The request may have
			// been made, so it is not sent again, but the next one
			// goes to the next control plane.
			c.failed[at].Store(c.clock.Now().UnixNano())
			c.current.CompareAndSwap(at, c.next(at))
		} else if unreachable(err, r.method) {
			c.failed[at].Store(c.clock.Now().UnixNano())
		}
		return nil, err
	}
}

// failedFor is how long the client moves on past a control plane that
// gave no answer (it could not be reached, or let a request run out of
// time) while another has not failed so: past a dead or frozen leader's
// lease (4s by default) and the election after it, so that requests
// sent round the servers during a failover do not come back to the one
// that failed, each to wait out its timeout again, as a k3s agent's load
// balancer sets a failed server aside. A control plane that answers is
// taken back at once.
const failedFor = 15 * time.Second

// next is the control plane to move on to after at: the next in the list
// that has not failed within failedFor, or the next one when every other
// has.
func (c *Client) next(at int32) int32 {
	n := int32(len(c.bases))
	now := c.clock.Now()
	for i := int32(1); i < n; i++ {
		j := (at + i) % n
		if f := c.failed[j].Load(); f == 0 || now.Sub(time.Unix(0, f)) >= failedFor {
			return j
		}
	}
	return (at + 1) % n
}

// unreachable tells an error that says the server was not reached, or
// lost the connection, on which another control plane is worth a try: a
// dial that failed, or a TLS handshake that did not finish (a server
// frozen with its port open), is, whatever the method, since nothing was
// sent; a connection lost under a request only for a read. A write may
// have been made, and sent again would be made twice, or answer a
// conflict with itself (an update) or NotFound (a delete): client-go sends
// no write again either.
func unreachable(err error, method string) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" || strings.Contains(err.Error(), "TLS handshake timeout") {
		return true
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.As(err, &op) || strings.Contains(err.Error(), "http2: client connection lost")
}

func (c *Client) sendTo(ctx context.Context, base *url.URL, r *request) (*http.Response, error) {
	u := *base
	u.Path += r.path
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	accept := r.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, statusFromResponse(resp)
	}
	return resp, nil
}

// statusFromResponse reads the Status of an error response, or makes one
// from the code when the body holds none.
func statusFromResponse(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var st metav1.Status
	if json.Unmarshal(data, &st) != nil || st.Kind != "Status" {
		msg := strings.TrimSpace(string(data))
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		st = metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  metav1.StatusReasonUnknown,
			Message: fmt.Sprintf("the server answered %d: %s", resp.StatusCode, msg),
		}
	}
	if st.Code == 0 {
		st.Code = int32(resp.StatusCode)
	}
	// A Retry-After in seconds (a proxy's 503 carries no Status) is the
	// Status's own.
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 && (st.Details == nil || st.Details.RetryAfterSeconds == 0) {
		if st.Details == nil {
			st.Details = &metav1.StatusDetails{}
		}
		st.Details.RetryAfterSeconds = int32(min(secs, 3600))
	}
	return statusError(st)
}

// call sends a request that is not a stream and decodes its answer into
// out (when out is not nil).
func (c *Client) call(ctx context.Context, r *request, out any) error {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", r.method, r.path, err)
	}
	return nil
}

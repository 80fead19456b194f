package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/store"
)

// forwarder sends the writes a follower's API receives to the leader's,
// as a Nomad server forwards to its leader: the follower's store takes no
// writes, and the leader's is the one that does. It then waits until the
// follower's store has the leader's answer, so that a client that wrote
// through this control plane reads what it wrote from it.
type forwarder struct {
	store *store.Store
	// self is this control plane's own URL, which it never forwards to:
	// named leader before its store has caught up, it answers 503.
	self   string
	leader atomic.Pointer[leaderTarget]
	proxy  *httputil.ReverseProxy
	log    *slog.Logger
	// clock times forwardTimeout and leaderWait.
	clock clock.WithDelayedExecution
	// changed is closed, and replaced, at each change of the leader or
	// of this control plane's role: it wakes the writes held for one.
	mu      sync.Mutex
	changed chan struct{}
}

// leaderTarget is a leader the forwarder sends to; gone ends once
// another leads (or none does), and with it the requests still waiting
// for this one's answer: a leader that stopped answering (its machine
// frozen, or cut off) would otherwise hold them long after another took
// over.
type leaderTarget struct {
	url    *url.URL
	gone   context.Context
	goneBy context.CancelFunc
}

// errLeaderChanged ends a forwarded request whose leader lost the
// election before it answered.
var errLeaderChanged = errors.New("another control plane took over as leader before this one answered")

// forwardTimeout bounds how long a follower waits for the leader to
// begin its answer to a forwarded write: a leader that froze would
// otherwise hold the follower's clients until its lease ran out and
// another took over, past the 5s a client commonly allows. Then the
// client hears 503 with Retry-After if the write never reached the
// leader, and 504 (unknown outcome) if it may have.
const forwardTimeout = 3 * time.Second

// errForwardTimeout ends a forwarded request the leader did not begin
// to answer within forwardTimeout.
var errForwardTimeout = fmt.Errorf("no answer within %s", forwardTimeout)

// leaderWait bounds how long a follower holds a write it can send to no
// leader (none is known, the one named is this control plane catching
// up, the leader could not be reached or answered that it no longer
// leads) for one that can take it, and sends it on the moment there is:
// a failover then costs a client the election, not the Retry-After of
// the 503 it would have had at once. It is that Retry-After, one second,
// so a client waits no longer than a 503 would have made it wait; after
// it the write is answered 503 as before.
const leaderWait = time.Second

// connectTimeout bounds the dial and TLS handshake of a connection to
// the leader. Connections are kept (HTTP/2), so one is made rarely; a
// leader that does not finish a handshake within it is frozen or cut
// off, and the write, never sent, is held for the next leader.
const connectTimeout = time.Second

// maxForwardTries bounds how often one write is sent on, each time to a
// new leader after the one before never had it.
const maxForwardTries = 3

// forwarding is a request on its way to leader; answered says that the
// leader answered, after which a change of leader no longer ends the
// request: the write was made, and its answer is passed on whole.
type forwarding struct {
	leader   *url.URL
	answered func() bool
	// sent is set once the request has a connection to the leader:
	// from then on any of it may have reached the leader, which may
	// make the write, so a missing answer is an unknown outcome.
	sent atomic.Bool
	// mayRetry says whether a write the leader never had may be held
	// for another leader rather than answered; again is then set, with
	// why, and nothing is written.
	mayRetry func() bool
	again    bool
	why      error
}

// errLeaderRefused is a forwarded write the leader answered 503 with a
// Retry-After: it did not carry it out (it no longer leads, or is
// catching up), and another leader may.
var errLeaderRefused = errors.New("the leader answered that it cannot take writes now")

// untilAnswered is the forwarder's transport: it tells each forwarding
// once its leader's answer is in.
type untilAnswered struct{ http.RoundTripper }

func (t untilAnswered) RoundTrip(r *http.Request) (*http.Response, error) {
	fw := r.Context().Value(targetKey{}).(*forwarding)
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		// Not WroteRequest: the leader's handler may run, and the
		// leader change end the request, before the transport calls
		// it back, which would tell a write the leader has for one
		// never sent. A connection is where the request may start
		// to arrive.
		GotConn: func(httptrace.GotConnInfo) { fw.sent.Store(true) },
	}))
	resp, err := t.RoundTripper.RoundTrip(r)
	if err == nil {
		fw.answered()
	}
	return resp, err
}

// forwardWait bounds how long a follower waits for its store to have the
// write the leader answered before it answers all the same.
const forwardWait = 10 * time.Second

// forwardedHeader names, on a request a follower sends on, the follower:
// a control plane that does not lead sends such a request no further.
const forwardedHeader = "Berth-Forwarded-By"

type targetKey struct{}

// newForwarder's transport presents cert, the control planes' client
// certificate (CN api.APIServerClientName), with which the leader
// believes the user a forwarded request names (see
// apiserver.PassCertificateUser): a user of a client certificate keeps
// their identity and groups, and RBAC on the leader judges them.
func newForwarder(st *store.Store, self string, ca *x509.CertPool, cert tls.Certificate, log *slog.Logger, clk clock.WithDelayedExecution) *forwarder {
	f := &forwarder{store: st, self: self, log: log, clock: clk, changed: make(chan struct{})}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(pr.In.Context().Value(targetKey{}).(*forwarding).leader)
			pr.SetXForwarded()
			pr.Out.Header.Set(forwardedHeader, f.self)
			apiserver.PassCertificateUser(pr.In, pr.Out.Header)
		},
		Transport: untilAnswered{&http.Transport{
			DialContext:           (&net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   connectTimeout,
			TLSClientConfig:       &tls.Config{RootCAs: ca, Certificates: certificates(cert), MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:     true,
			ResponseHeaderTimeout: time.Minute,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   64,
			// A connection to a leader that froze is dropped within
			// two seconds, so that the next write dials again
			// rather than queue on it.
			HTTP2: &http.HTTP2Config{SendPingTimeout: time.Second, PingTimeout: time.Second},
		}},
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			fw := resp.Request.Context().Value(targetKey{}).(*forwarding)
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" && fw.mayRetry() {
				fw.again, fw.why = true, errLeaderRefused
				return errLeaderRefused
			}
			return f.caughtUp(resp)
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if cause := context.Cause(r.Context()); errors.Is(cause, errLeaderChanged) || errors.Is(cause, errForwardTimeout) {
				err = cause
			}
			fw := r.Context().Value(targetKey{}).(*forwarding)
			if fw.again {
				return // refused by the leader, held for the next
			}
			if !fw.sent.Load() && fw.mayRetry() {
				// The leader never had the write: it waits for
				// the next.
				fw.again, fw.why = true, err
				return
			}
			if fw.sent.Load() {
				// The leader has the write and did not answer:
				// it may have made it, so the client must not
				// take it for one not made (a create sent again
				// would meet itself, AlreadyExists).
				apiserver.WriteError(w, unknownOutcome(fmt.Sprintf("the leader %s did not answer the forwarded write: %v", fw.leader, err)))
				return
			}
			apiserver.WriteError(w, unavailable(fmt.Sprintf("the leader %s cannot be reached: %v", fw.leader, err)))
		},
	}
	return f
}

// certificates is the list of a TLS client's one certificate, empty when
// there is none.
func certificates(cert tls.Certificate) []tls.Certificate {
	if len(cert.Certificate) == 0 {
		return nil
	}
	return []tls.Certificate{cert}
}

// route is the API server's Forward: the writes of a follower go to the
// leader, everything else is served here. A write no leader can take yet
// is held (see leaderWait); one held until this control plane leads is
// served here.
func (f *forwarder) route(r *http.Request) http.Handler {
	if !forwardable(r) || !f.store.Following() {
		return nil
	}
	// Held while it cannot be sent on: no leader is known, the one
	// named is this control plane still catching up, or r came from
	// another follower that took this one for the leader.
	deadline := f.clock.Now().Add(leaderWait)
	f.hold(r, deadline, func() bool { return !f.store.Following() || f.sendable(r) })
	if !f.store.Following() {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.forward(w, r, deadline) })
}

// changes is closed at the next change of the leader or of this control
// plane's role.
func (f *forwarder) changes() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// wake wakes the writes held for a leader: the leader changed, or this
// control plane began to lead or stopped.
func (f *forwarder) wake() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.changed)
	f.changed = make(chan struct{})
}

// sendable says whether r can be sent on now: to a leader that is
// another control plane, and r did not come from one.
func (f *forwarder) sendable(r *http.Request) bool {
	t := f.leader.Load()
	return t != nil && t.url.String() != f.self && r.Header.Get(forwardedHeader) == ""
}

// hold waits, until deadline or until r is done, for ready (checked at
// each change of the leader or of this control plane's role), and says
// whether it is.
func (f *forwarder) hold(r *http.Request, deadline time.Time, ready func() bool) bool {
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		changed := f.changes()
		if ready() {
			return true
		}
		d := deadline.Sub(f.clock.Now())
		if d <= 0 {
			return false
		}
		if timer == nil {
			timer = f.clock.NewTimer(d)
		}
		select {
		case <-changed:
		case <-timer.C():
		case <-r.Context().Done():
			return false
		}
	}
}

// ServeHTTP sends a write on to the leader, as route does once it holds
// no more.
func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.forward(w, r, f.clock.Now().Add(leaderWait))
}

// forward sends r on to the leader. A write the leader never had (it
// could not be reached, or answered 503 with a Retry-After) is held until
// deadline for another leader, and sent on to it, so that it is held
// across a change of leader rather than answered 503 in the middle of it.
// Its body is read first, for each try to send.
func (f *forwarder) forward(w http.ResponseWriter, r *http.Request, deadline time.Time) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var buf bytes.Buffer
		if err := apiserver.CopyBody(w, r, &buf, apiserver.DefaultMaxBodyBytes); err != nil {
			apiserver.WriteError(w, err)
			return
		}
		body = buf.Bytes()
	}
	var (
		last *leaderTarget // the leader that never had the write
		why  error
	)
	for try := 1; ; try++ {
		target := f.leader.Load()
		switch {
		case last != nil && (target == last || target == nil || target.url.String() == f.self):
			// Held until the deadline, and no other leader to
			// send to.
			apiserver.WriteError(w, unavailable(fmt.Sprintf("the leader %s cannot be reached: %v", last.url, why)))
			return
		case target == nil:
			apiserver.WriteError(w, unavailable("no control plane leads the cluster yet; try again"))
			return
		case target.url.String() == f.self:
			apiserver.WriteError(w, unavailable("this control plane was just elected leader and is catching up; try again"))
			return
		case r.Header.Get(forwardedHeader) != "":
			// Two control planes that each take the other for the
			// leader, for as long as one has not yet seen it change,
			// would send the request round between them.
			apiserver.WriteError(w, unavailable(fmt.Sprintf("%s took this control plane for the leader, and it follows another; try again", r.Header.Get(forwardedHeader))))
			return
		}
		fw := f.send(w, r, target, body, func() bool {
			return try < maxForwardTries && (f.leader.Load() != target || f.clock.Now().Before(deadline))
		})
		if !fw.again || r.Context().Err() != nil {
			return
		}
		last, why = target, fw.why
		f.log.Debug("holding a write the leader never had for the next leader", "leader", target.url, "err", why)
		f.hold(r, deadline, func() bool {
			next := f.leader.Load()
			return next != nil && next != last
		})
	}
}

// send is one try of forward, to target.
func (f *forwarder) send(w http.ResponseWriter, r *http.Request, target *leaderTarget, body []byte, mayRetry func() bool) *forwarding {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	changed := context.AfterFunc(target.gone, func() { cancel(errLeaderChanged) })
	timer := f.clock.AfterFunc(forwardTimeout, func() { cancel(errForwardTimeout) })
	answered := func() bool {
		timer.Stop()
		return changed()
	}
	defer answered()
	fw := &forwarding{leader: target.url, answered: answered, mayRetry: mayRetry}
	out := r.WithContext(context.WithValue(ctx, targetKey{}, fw))
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
	}
	f.proxy.ServeHTTP(w, out)
	return fw
}

// caughtUp holds the leader's answer to a write until this control
// plane's store has the revision the answer names.
func (f *forwarder) caughtUp(resp *http.Response) error {
	rev, err := strconv.ParseUint(resp.Header.Get(apiserver.RevisionHeader), 10, 64)
	if err != nil {
		return nil // no write was made
	}
	ctx, cancel := context.WithTimeout(resp.Request.Context(), forwardWait)
	defer cancel()
	if err := f.store.WaitRevision(ctx, rev); err != nil && resp.Request.Context().Err() == nil {
		f.log.Warn("answering a forwarded write before this control plane's store has it", "revision", rev, "have", f.store.Revision(), "err", err)
	}
	return nil
}

// setLeader takes the leader's announced URL ("" while none leads). The
// requests under way to the one before end, unless it leads still.
func (f *forwarder) setLeader(v string) {
	var next *url.URL
	if v != "" {
		u, err := url.Parse(v)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			f.log.Warn("the leader announced an address that is not an https URL", "leader", v)
		} else {
			next = u
		}
	}
	old := f.leader.Load()
	if old != nil && next != nil && old.url.String() == next.String() {
		return
	}
	var t *leaderTarget
	if next != nil {
		gone, goneBy := context.WithCancel(context.Background())
		t = &leaderTarget{url: next, gone: gone, goneBy: goneBy}
		if v != f.self {
			f.log.Info("following the leader", "leader", v)
		}
	}
	f.leader.Store(t)
	if old != nil {
		old.goneBy()
	}
	f.wake()
}

// known says whether a leader is known: the "leader" check of /readyz.
func (f *forwarder) known() error {
	if !f.store.Following() || f.leader.Load() != nil {
		return nil
	}
	return fmt.Errorf("no control plane leads the cluster yet")
}

// forwardable tells the requests a follower sends to the leader: those
// that write. Reads and watches are served from the follower's own store;
// so are exec, attach, port-forward and the proxies, which reach agents
// and pods from wherever they arrive, the reviews of access and tokens,
// which write nothing, and a join, which signs with the credentials every
// control plane shares.
func forwardable(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	p := r.URL.Path
	switch {
	case p == apiserver.JoinPath,
		strings.HasPrefix(p, "/apis/authentication.k8s.io/"),
		strings.HasPrefix(p, "/apis/authorization.k8s.io/"):
		return false
	}
	resource, sub := resourceOfPath(p)
	switch sub {
	case "exec", "attach", "portforward", "proxy":
		return resource != "pods" && resource != "services" && resource != "nodes"
	}
	return true
}

// resourceOfPath reads the resource and subresource of an API path:
// /api/v1/[namespaces/NS/]RESOURCE/NAME/SUB…, or /apis/GROUP/VERSION/….
func resourceOfPath(p string) (resource, sub string) {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	var rest []string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		rest = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		rest = segs[3:]
	default:
		return "", ""
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	if len(rest) >= 1 {
		resource = rest[0]
	}
	if len(rest) >= 3 {
		sub = rest[2]
	}
	return resource, sub
}

// unknownOutcome is a 504 as Kubernetes answers a request that ran out
// of time: the write was not refused, and may yet be made. A client reads
// the object before it writes again.
func unknownOutcome(msg string) error {
	return apierrors.NewTimeoutError("the server was unable to return a response in the time allotted, but may still be processing the request; "+msg, 1)
}

// unavailable is a 503 that asks the client to retry in a second.
func unavailable(msg string) error {
	se := apierrors.NewServiceUnavailable(msg)
	se.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
	return se
}

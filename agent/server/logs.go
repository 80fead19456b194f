package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// LogLookup finds the run of a container whose logs are asked for, or to
// run a command in: the current (or last) run, or with previous the one
// before it. It is the pod manager's ContainerRun. An error means the pod,
// the container or the run is not known; the container server answers it
// with the error's text, 404 if it wraps runtime.ErrNotFound (no such pod
// here), 400 otherwise.
type LogLookup func(namespace, pod, container string, previous bool) (runtime.ID, error)

// Options configure New.
type Options struct {
	// Runtime reads the logs and runs the commands.
	Runtime runtime.Runtime
	// Lookup turns a pod and container into a run.
	Lookup LogLookup
	// ClientCAs verify the client certificate of a request even when the
	// TLS configuration did not (TLSConfig does); nil trusts the
	// chains the TLS handshake verified.
	ClientCAs *x509.CertPool
	// Logger records requests that failed after the answer began.
	Logger *slog.Logger
	// Clock is what sinceSeconds counts back from, and times a followed
	// log's quiet start and the opening of a SPDY session's streams; the
	// real clock when nil.
	Clock clock.Clock
	// Metrics are the node's resource metrics, served at
	// api.ResourceMetricsPath; nil serves none.
	Metrics func() (api.ResourceMetrics, bool)
	// PodAddresses, for port-forward, says where a pod's ports are
	// reached; nil forwards none.
	PodAddresses PodAddresses
	// PortForward, when set, gives the runtime's own forwarding to a
	// pod's ports (the CRI's PortForward), nil for a pod reached at its
	// PodAddresses.
	PortForward func(ctx context.Context, namespace, name string) (runtime.PortForwardSession, error)
}

// New serves GET api.ContainerLogsPath/{namespace}/{pod}/{container}
// (a container's log), GET api.ContainerExecPath/{namespace}/{pod}/{container}
// (a command run in it, kubectl exec), GET
// api.ContainerAttachPath/{namespace}/{pod}/{container} (its own
// process's streams, kubectl attach) and port-forward to the API server
// alone: a request must carry a verified client certificate named
// api.APIServerClientName (401 without one, 403 for another name), so
// that a node or a user holding a certificate of the cluster CA cannot
// read logs, run commands or attach past the API server's authorization.
func New(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	s := &containerServer{opts: o}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.ContainerLogsPath+"/{namespace}/{pod}/{container}", s.serveLogs)
	// A WebSocket's handshake is a GET; kubectl's SPDY upgrade is a POST,
	// which the kubelet takes as well.
	for _, method := range []string{"GET ", "POST "} {
		mux.HandleFunc(method+api.ContainerExecPath+"/{namespace}/{pod}/{container}", s.serveExec)
		mux.HandleFunc(method+api.ContainerAttachPath+"/{namespace}/{pod}/{container}", s.serveAttach)
	}
	mux.HandleFunc("GET "+api.ResourceMetricsPath, s.serveMetrics)
	mux.HandleFunc("GET "+api.PortForwardPath+"/{namespace}/{pod}", s.servePortForward)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("%s %s: not found; the agent serves GET %s/NAMESPACE/POD/CONTAINER, GET or POST %s/NAMESPACE/POD/CONTAINER and %s/NAMESPACE/POD/CONTAINER, GET %s/NAMESPACE/POD and %s", r.Method, r.URL.Path, api.ContainerLogsPath, api.ContainerExecPath, api.ContainerAttachPath, api.PortForwardPath, api.ResourceMetricsPath), http.StatusNotFound)
	})
	return s.authenticate(mux)
}

// TLSConfig is the TLS configuration of the container server: the
// node's serving certificate and key (PEM, from its join) and a client
// certificate required and verified against clientCAs.
func TLSConfig(certPEM, keyPEM []byte, clientCAs *x509.CertPool) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("container server certificate: %w", err)
	}
	cfg, err := ClientAuthConfig(clientCAs)
	if err != nil {
		return nil, err
	}
	cfg.Certificates = []tls.Certificate{cert}
	return cfg, nil
}

// ClientAuthConfig is the container server's TLS configuration without its
// certificate: client certificates required and verified against
// clientCAs.
func ClientAuthConfig(clientCAs *x509.CertPool) (*tls.Config, error) {
	if clientCAs == nil {
		return nil, errors.New("container server: no CA to verify clients with")
	}
	return &tls.Config{
		ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs:  clientCAs,
		MinVersion: tls.VersionTLS12,
	}, nil
}

type containerServer struct {
	opts Options
}

// authenticate lets through requests of the API server's certificate.
func (s *containerServer) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaf, err := s.clientCertificate(r)
		if err != nil {
			http.Error(w, "Unauthorized: "+err.Error(), http.StatusUnauthorized)
			return
		}
		if leaf.Subject.CommonName != api.APIServerClientName {
			http.Error(w, fmt.Sprintf("Forbidden: %q may not use the container server (logs, exec, attach, port-forward, metrics)", leaf.Subject.CommonName), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// clientCertificate is the request's verified client certificate.
func (s *containerServer) clientCertificate(r *http.Request) (*x509.Certificate, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, errors.New("no client certificate")
	}
	leaf := r.TLS.PeerCertificates[0]
	if s.opts.ClientCAs == nil {
		if len(r.TLS.VerifiedChains) == 0 {
			return nil, errors.New("client certificate not verified")
		}
		return leaf, nil
	}
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: s.opts.ClientCAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return leaf, nil
}

func (s *containerServer) serveLogs(w http.ResponseWriter, r *http.Request) {
	ns, pod, ctr := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	q, err := parseLogQuery(r.URL.Query(), s.opts.Clock.Now())
	noLines := errors.Is(err, errNoLines)
	if err != nil && !noLines {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	opts := q.opts
	id, _, ok := s.run(w, r, ns, pod, ctr, q.previous)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if noLines {
		w.WriteHeader(http.StatusOK)
		return
	}
	fw := &flushWriter{w: w, rc: http.NewResponseController(w), flush: opts.Follow}
	done := make(chan struct{})
	if opts.Follow {
		// The API server is waiting for the answer to begin before it
		// streams on to its client; a quiet container must not hold it.
		// With times asked for, it begins at the first line or after
		// followQuiet, so that a log that keeps no times is refused with
		// a 400 rather than streamed empty.
		if opts.Timestamps || !opts.Since.IsZero() {
			t := s.opts.Clock.NewTimer(followQuiet)
			defer t.Stop()
			go func() {
				select {
				case <-t.C():
					fw.begin()
				case <-done:
				}
			}()
		} else {
			fw.begin()
		}
	}
	var out io.Writer = fw
	if q.limitBytes > 0 {
		out = &limitWriter{w: fw, left: q.limitBytes}
	}
	err = s.opts.Runtime.Logs(r.Context(), id, opts, out)
	close(done)
	begun := fw.begun()
	switch {
	case err == nil, errors.Is(err, errLogLimit), r.Context().Err() != nil:
		// Done, or the API server went away (its user stopped following).
	case !begun && errors.Is(err, runtime.ErrNoTimes):
		http.Error(w, fmt.Sprintf("container %s of pod %s/%s: %v", ctr, ns, pod, runtime.ErrNoTimes), http.StatusBadRequest)
	case !begun && errors.Is(err, runtime.ErrNotFound):
		http.Error(w, fmt.Sprintf("container %s of pod %s/%s: no log of run %s: %v", ctr, ns, pod, id, err), http.StatusNotFound)
	case !begun:
		http.Error(w, fmt.Sprintf("logs of %s: %v", id, err), http.StatusInternalServerError)
	default:
		// The answer has begun: all that can be done is to end it early.
		s.opts.Logger.Warn("container log stream ended", "pod", ns+"/"+pod, "container", ctr, "run", id.String(), "err", err)
	}
}

// followQuiet is how long a followed log asked for times waits for its
// first line before its answer begins anyway.
const followQuiet = time.Second

// errNoLines is parseLogQuery's way to say tailLines=0: an empty answer.
var errNoLines = errors.New("no lines asked for")

// logQuery is a log request as the agent serves it.
type logQuery struct {
	opts runtime.LogOptions
	// previous asks for the run before the current one.
	previous bool
	// limitBytes, when positive, ends the answer after that many bytes.
	limitBytes int64
}

// parseLogQuery reads the log options of the agent's endpoint (see
// api.ParsePodLogOptions) as the runtime takes them: sinceSeconds counted
// back from now on the agent's clock, which stamped the lines. It says
// errNoLines for tailLines=0.
func parseLogQuery(q url.Values, now time.Time) (logQuery, error) {
	o, err := api.ParsePodLogOptions(q, false)
	if err != nil {
		return logQuery{}, err
	}
	lq := logQuery{
		opts:       runtime.LogOptions{Follow: o.Follow, Timestamps: o.Timestamps, Since: o.SinceTime},
		previous:   o.Previous,
		limitBytes: o.LimitBytes,
	}
	if o.SinceSeconds > 0 {
		lq.opts.Since = now.Add(-time.Duration(o.SinceSeconds) * time.Second)
	}
	if o.TailLines != nil {
		if *o.TailLines == 0 && o.Follow {
			// Kubernetes' tailLines=0 is "nothing written so far", which
			// the runtime cannot start a stream from.
			return lq, errors.New("tailLines=0 with follow=true is not supported")
		}
		lq.opts.TailLines = *o.TailLines
		if *o.TailLines == 0 {
			return lq, errNoLines
		}
	}
	return lq, nil
}

// errLogLimit ends a log at its limitBytes.
var errLogLimit = errors.New("log limit reached")

// limitWriter passes on at most left bytes, then fails with errLogLimit,
// which ends the runtime's copy of the log.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	var limited bool
	if int64(len(p)) >= l.left {
		p, limited = p[:l.left], true
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err == nil && limited {
		err = errLogLimit
	}
	return n, err
}

// flushWriter sends each write on at once when following, so that a line
// a container writes reaches the user without waiting for a buffer to
// fill.
type flushWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	flush bool
	// mu orders the answer's beginning, from a timer, with the writes.
	mu    sync.Mutex
	wrote bool
}

// begin starts the answer, once: 200 and the headers, flushed.
func (f *flushWriter) begin() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.wrote {
		return
	}
	f.wrote = true
	f.w.WriteHeader(http.StatusOK)
	_ = f.rc.Flush()
}

// begun reports whether the answer has begun: an error can then only
// end it.
func (f *flushWriter) begun() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wrote
}

func (f *flushWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wrote = true
	n, err := f.w.Write(p)
	if err != nil || !f.flush {
		return n, err
	}
	if err := f.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return n, err
	}
	return n, nil
}

// run finds the run of a container (the one before, with previous) and
// its status, or answers 404 for a pod the node does not run, 400 for a
// container or run it does not have (the kubelet's answers), 500 for a
// runtime that cannot say.
func (s *containerServer) run(w http.ResponseWriter, r *http.Request, ns, pod, ctr string, previous bool) (runtime.ID, runtime.Status, bool) {
	id, err := s.opts.Lookup(ns, pod, ctr, previous)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, runtime.ErrNotFound) {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return id, runtime.Status{}, false
	}
	st, err := s.opts.Runtime.Status(r.Context(), id)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, runtime.ErrNotFound) {
			code = http.StatusNotFound
		}
		http.Error(w, fmt.Sprintf("container %s of pod %s/%s: run %s: %v", ctr, ns, pod, id, err), code)
		return id, st, false
	}
	return id, st, true
}

package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/admission"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes           = 3 << 20
	DefaultMaxInflightPerIdentity = 400
	// Kubernetes' defaults of --max-requests-inflight and
	// --max-mutating-requests-inflight.
	DefaultMaxRequestsInflight         = 400
	DefaultMaxMutatingRequestsInflight = 200
	// DefaultMaxBytesInflight bounds the answers' bytes being written at
	// once, per class (reads, writes). A stored object is at most about
	// MaxBodyBytes (3 MiB), so 256 MiB serves some 85 of the largest
	// objects and thousands of typical ones at once, while 200 readers of
	// a 1.3 MB object no longer hold gigabytes.
	DefaultMaxBytesInflight int64 = 256 << 20
	DefaultBookmarkInterval       = time.Minute
	DefaultWatchTimeout           = 30 * time.Minute
	// Timeouts of the http.Server that Serve runs. There is no write
	// timeout: a watch writes for as long as it lasts.
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 2 * time.Minute
	// bodyReadTimeout bounds how long a client may take to send a body.
	bodyReadTimeout = time.Minute
)

// VersionInfo is what /version and berth_build_info report.
type VersionInfo struct {
	Version   string
	Commit    string
	GoVersion string
}

// ReadyCheck is one condition of /readyz: the store loaded, every source
// synced once, and whatever else the control plane adds.
type ReadyCheck struct {
	Name  string
	Check func() error
}

// AdmissionPlugin may refuse a write after the object has been decoded,
// defaulted and validated and the caller authorized: the hook the quota
// controller and the mirror-pod guard use. A refusal that is not already a
// Status is answered 403 with its message.
type AdmissionPlugin interface {
	Admit(ctx context.Context, a auth.Attributes, id *auth.Identity) error
}

// AdmissionFunc adapts a function to AdmissionPlugin.
type AdmissionFunc func(ctx context.Context, a auth.Attributes, id *auth.Identity) error

// Admit calls f.
func (f AdmissionFunc) Admit(ctx context.Context, a auth.Attributes, id *auth.Identity) error {
	return f(ctx, a, id)
}

// Config is what New needs. Store, Authenticator and Authorizer are
// required; the rest have defaults.
type Config struct {
	Store         *store.Store
	Authenticator auth.Authenticator
	Authorizer    auth.Authorizer
	// Admission runs, in order, on every create, update, patch and delete.
	Admission   []AdmissionPlugin
	Version     VersionInfo
	ReadyChecks []ReadyCheck
	// MaxBodyBytes caps request bodies (413 beyond); default 3 MiB.
	MaxBodyBytes int64
	// MaxInflightPerIdentity caps the requests one identity may have in
	// flight, watches excepted (429 beyond); default 400.
	MaxInflightPerIdentity int
	// MaxRequestsInflight and MaxMutatingRequestsInflight cap the reads
	// (get, list) and the writes in flight on the server, across
	// callers, as kube-apiserver's flags of those names do (429 beyond);
	// defaults 400 and 200, negative for no cap. Nodes' requests,
	// watches and streams are not counted (see seatsFor).
	MaxRequestsInflight         int
	MaxMutatingRequestsInflight int
	// MaxBytesInflight bounds the encoded bytes of the answers being
	// written at once, for reads and for writes each (see byteBudget):
	// an answer waits a second for its bytes, then gets 429 with
	// Retry-After; one larger than the budget is served alone. Nodes'
	// answers are not counted. Default DefaultMaxBytesInflight, negative
	// for no bound.
	MaxBytesInflight int64
	// BookmarkInterval is how often a watch that asked for bookmarks gets
	// one; default one minute.
	BookmarkInterval time.Duration
	// WatchTimeout ends watches that did not ask for a timeoutSeconds, so
	// that long-lived clients rebalance; default 30 minutes.
	WatchTimeout time.Duration
	// Registry receives the server's metrics; a new one when nil. /metrics
	// serves it, so the control plane may register its own collectors.
	Registry *prometheus.Registry
	// ProxyDialTimeout and ProxyResponseHeaderTimeout bound how long
	// pods/proxy and services/proxy wait to connect to a pod and for its
	// answer to begin (502 beyond); defaults 10s and one minute. The
	// answer itself has no bound: it streams.
	ProxyDialTimeout           time.Duration
	ProxyResponseHeaderTimeout time.Duration
	// Forward, when set, may pick another handler for a request before
	// any of this server's own, which then serves it instead: a control
	// plane that follows another's store sends writes to the leader.
	// It returns nil for the requests served here.
	Forward func(*http.Request) http.Handler
	// ProxyClientName is the common name of the client certificate (signed
	// by the cluster CA) of another control plane that passes requests on:
	// from it alone the X-Remote-User and X-Remote-Group headers name the
	// user (see PassCertificateUser). Empty: from nobody.
	ProxyClientName string
	Logger          *slog.Logger
	Clock           clock.WithTickerAndDelayedExecution
}

// Server is berth's API server. Build it with New, serve Handler (or call
// Serve), and end it with Shutdown.
type Server struct {
	cfg   Config
	store *store.Store
	log   *slog.Logger
	clock clock.WithTickerAndDelayedExecution
	mux   *http.ServeMux
	// public are the paths registered with HandlePublic, sorted, which
	// the reviews answer as open to every caller. A registration replaces
	// the slice, never changes it.
	public  atomic.Pointer[[]string]
	handler http.Handler
	metrics *metrics
	limiter *inflightLimiter
	// readSeats and writeSeats cap the reads and writes in flight.
	readSeats, writeSeats seats
	// readBytes and writeBytes bound the bytes of answers being written.
	readBytes, writeBytes *byteBudget
	// pages keeps the snapshots paged lists are read from.
	pages *pagingSnapshots
	disc  *discoveryDocs
	// discGen is the generation of the custom kinds disc lists.
	discGen [2]uint64
	// openapi builds the OpenAPI documents the first time they are asked
	// for (6 ms and 4 MB, which most servers in tests never need).
	openapi func() (*openAPIDocs, error)
	// openapiV2 builds the OpenAPI v2 document likewise (40 ms, most of
	// it gnostic reading the JSON into the Document it marshals).
	openapiV2 func() (*openAPIV2Doc, error)
	// openapiCustom are the documents with the custom kinds' schemas
	// added (openapi_custom.go).
	openapiCustomMu sync.Mutex
	openapiCustom   customOpenAPI
	// webhooks calls the admission webhooks the cluster configures.
	webhooks *admission.Webhooks
	// policies evaluates the ValidatingAdmissionPolicies.
	policies *admission.Policies
	// fieldManagers serve server-side apply.
	fieldManagers fieldManagers
	// resources finds a kind by "group/version/resource" ("/v1/pods").
	resources map[string]*api.Kind
	// proxyTransport carries pods/proxy and services/proxy to pods.
	proxyTransport *http.Transport
	// replicated is set when the store is shared by several control
	// planes: writes' answers then carry RevisionHeader.
	replicated bool

	mu           sync.Mutex
	subresources map[subresourceKey]SubresourceHandler
	servers      []*http.Server

	// stopCtx ends when Shutdown begins.
	stopCtx context.Context
	stopAll context.CancelFunc
	// streams counts watches in flight, which Shutdown waits for.
	streams sync.WaitGroup
}

// New builds a server over a store.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("apiserver: Config.Store is required")
	}
	if cfg.Authenticator == nil || cfg.Authorizer == nil {
		return nil, errors.New("apiserver: Config.Authenticator and Config.Authorizer are required")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxInflightPerIdentity <= 0 {
		cfg.MaxInflightPerIdentity = DefaultMaxInflightPerIdentity
	}
	if cfg.MaxRequestsInflight == 0 {
		cfg.MaxRequestsInflight = DefaultMaxRequestsInflight
	}
	if cfg.MaxMutatingRequestsInflight == 0 {
		cfg.MaxMutatingRequestsInflight = DefaultMaxMutatingRequestsInflight
	}
	if cfg.MaxBytesInflight == 0 {
		cfg.MaxBytesInflight = DefaultMaxBytesInflight
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = DefaultBookmarkInterval
	}
	if cfg.WatchTimeout <= 0 {
		cfg.WatchTimeout = DefaultWatchTimeout
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.ProxyDialTimeout <= 0 {
		cfg.ProxyDialTimeout = DefaultProxyDialTimeout
	}
	if cfg.ProxyResponseHeaderTimeout <= 0 {
		cfg.ProxyResponseHeaderTimeout = DefaultProxyResponseHeaderTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Version.Version == "" {
		cfg.Version.Version = "dev"
	}
	s := &Server{
		cfg:            cfg,
		store:          cfg.Store,
		log:            cfg.Logger,
		clock:          cfg.Clock,
		mux:            http.NewServeMux(),
		limiter:        newInflightLimiter(cfg.MaxInflightPerIdentity),
		pages:          newPagingSnapshots(cfg.Clock),
		readSeats:      newSeats(cfg.MaxRequestsInflight),
		writeSeats:     newSeats(cfg.MaxMutatingRequestsInflight),
		readBytes:      newByteBudget(cfg.MaxBytesInflight),
		writeBytes:     newByteBudget(cfg.MaxBytesInflight),
		resources:      map[string]*api.Kind{},
		subresources:   map[subresourceKey]SubresourceHandler{},
		proxyTransport: newProxyTransport(cfg.ProxyDialTimeout, cfg.ProxyResponseHeaderTimeout),
		replicated:     cfg.Store.Replicated(),
	}
	s.stopCtx, s.stopAll = context.WithCancel(context.Background())
	for _, k := range api.Kinds() {
		s.resources[k.GVK.Group+"/"+k.GVK.Version+"/"+k.Resource] = k
	}
	s.subresources[subresourceKey{podKind, auth.SubresourceEviction}] = s.serveEviction
	m, err := newMetrics(cfg.Registry, cfg.Store, cfg.Version)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if s.webhooks, err = admission.NewWebhooks(cfg.Store, cfg.Logger); err != nil {
		return nil, err
	}
	s.policies = admission.NewPolicies(cfg.Store, cfg.Logger)
	if _, err = s.discovery(); err != nil {
		return nil, err
	}
	s.openapi = sync.OnceValues(func() (*openAPIDocs, error) { return newOpenAPIDocs(cfg.Version.Version) })
	s.openapiV2 = sync.OnceValues(func() (*openAPIV2Doc, error) { return newOpenAPIV2Doc(cfg.Version.Version) })
	s.routes()
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s, nil
}

// routes registers the server's own paths.
func (s *Server) routes() {
	api := http.HandlerFunc(s.serveAPI)
	for _, p := range []string{"/api", "/api/", "/apis", "/apis/"} {
		s.Handle(p, api, true)
	}
	s.Handle(autoscalingV1Prefix, http.HandlerFunc(s.serveAutoscalingV1), true)
	s.HandlePublic("/version", http.HandlerFunc(s.serveVersion))
	s.HandlePublic("/livez", http.HandlerFunc(s.serveLivez))
	s.HandlePublic("/healthz", http.HandlerFunc(s.serveLivez))
	s.HandlePublic("/readyz", http.HandlerFunc(s.serveReadyz))
	s.HandlePublic("/metrics", s.metrics.handler())
	s.Handle(pathAccessReview, http.HandlerFunc(s.serveAccessReview), true)
	s.Handle(pathRulesReview, http.HandlerFunc(s.serveRulesReview), true)
	s.Handle(pathSelfReview, http.HandlerFunc(s.serveSelfReview), true)
	s.Handle(pathSubjectReview, http.HandlerFunc(s.serveSubjectAccessReview), true)
	openapi := http.HandlerFunc(s.serveOpenAPIV3)
	s.Handle("/openapi/v3", openapi, true)
	s.Handle("/openapi/v3/", openapi, true)
	s.Handle("/openapi/v2", http.HandlerFunc(s.serveOpenAPIV2), true)
	// Everything else is a 404 Status, for authenticated callers.
	s.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { WriteError(w, notFoundPath()) }), true)
}

// Handle registers an extra route (webhooks, node join, …) on the
// server's mux, with a net/http pattern. An authenticated route answers
// 401 without a valid bearer token and finds the caller with
// IdentityFromContext; one that is not checks a secret of its own (the
// join token, a webhook's signature). Every route gets panic recovery and
// request metrics. More specific patterns win over the server's own
// "/api/" ones.
func (s *Server) Handle(pattern string, h http.Handler, authenticated bool) {
	if authenticated {
		h = s.authenticate(h)
	}
	s.mux.Handle(pattern, h)
}

// HandlePublic registers a path that serves information anyone may read
// without a token: health, version, metrics, the service account issuer's
// discovery documents. The access and rules reviews answer exactly these
// paths as open to every caller for get, as Kubernetes'
// system:public-info-viewer role opens health and version (berth serves
// the issuer's documents without a token too, as a cluster that binds
// system:service-account-issuer-discovery to unauthenticated users does).
// path is a path, not a subtree ("/x/") or a method pattern.
func (s *Server) HandlePublic(path string, h http.Handler) {
	if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.ContainsAny(path, " {") {
		panic(fmt.Sprintf("apiserver: HandlePublic(%q): a path, not a pattern", path))
	}
	var public []string
	if p := s.public.Load(); p != nil {
		public = *p
	}
	i, _ := slices.BinarySearch(public, path)
	public = slices.Insert(slices.Clone(public), i, path)
	s.public.Store(&public)
	s.mux.Handle(path, h)
}

// publicPaths are the paths registered with HandlePublic; not to be
// changed.
func (s *Server) publicPaths() []string {
	if p := s.public.Load(); p != nil {
		return *p
	}
	return nil
}

// Handler is the server as an http.Handler, for httptest or a caller's own
// http.Server.
func (s *Server) Handler() http.Handler { return s.handler }

// serveHTTP is the outermost layer: metrics and panic recovery around the
// mux.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut || r.Method == http.MethodPost || r.Method == http.MethodPatch {
		growStack()
	}
	rec := &requestRecord{verb: verbOfMethod(r.Method)}
	sw := &statusWriter{ResponseWriter: w}
	start := s.clock.Now()
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", stack())
			if !sw.wrote {
				WriteError(sw, fmt.Errorf("internal error: %v", p))
			}
		}
		s.metrics.observe(rec, sw.code(), s.clock.Since(start))
	}()
	if s.refuseReset(sw, r) {
		return
	}
	defer s.countReset(r)
	r = r.WithContext(context.WithValue(r.Context(), recordKey{}, rec))
	if s.cfg.Forward != nil {
		if h := s.cfg.Forward(r); h != nil {
			h.ServeHTTP(sw, r)
			return
		}
	}
	if s.replicated && r.Method != http.MethodGet && r.Method != http.MethodHead {
		sw.revision = s.store.Revision
	}
	s.mux.ServeHTTP(sw, r)
}

// RevisionHeader carries, on the answer to a write of a control plane
// whose store is replicated, the store's revision when the answer began:
// every write the request made is in it. A follower that forwarded the
// request waits until its own store has it before it answers, so that
// its client reads what it wrote.
const RevisionHeader = "Berth-Revision"

// maxConcurrentStreams bounds the requests and watches one HTTP/2
// connection may have open at once.
const maxConcurrentStreams = 1000

// Serve answers requests on l until Shutdown, over TLS when tlsConfig is
// not nil (HTTP/2 is negotiated there). It returns nil after Shutdown.
func (s *Server) Serve(l net.Listener, tlsConfig *tls.Config) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		TLSConfig:         tlsConfig,
		ConnContext:       s.connContext,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if err := http2.ConfigureServer(srv, &http2.Server{
		MaxConcurrentStreams: maxConcurrentStreams,
		// The default round-robin scheduler looks at every open stream's
		// queue for each frame it sends, idle watches included; a
		// connection that carries many watches (a client of many
		// informers, or agents behind one proxy) spent a few percent of
		// the server's CPU there. This one looks only at streams with
		// something to send.
		NewWriteScheduler: func() http2.WriteScheduler { return http2.NewRandomWriteScheduler() },
	}); err != nil {
		return err
	}
	s.mu.Lock()
	select {
	case <-s.stopCtx.Done():
		s.mu.Unlock()
		return http.ErrServerClosed
	default:
	}
	s.servers = append(s.servers, srv)
	s.mu.Unlock()
	var err error
	if tlsConfig != nil {
		err = srv.ServeTLS(l, "", "")
	} else {
		err = srv.Serve(l)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown ends every watch cleanly (each stream ends as if its timeout
// had come, so clients watch again elsewhere or later), stops the servers
// Serve started, waiting for requests in flight until ctx ends, and
// returns once every watch has finished.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopAll()
	s.mu.Lock()
	servers := s.servers
	s.servers = nil
	s.mu.Unlock()
	var errs []error
	for _, srv := range servers {
		if err := s.shutdownServer(ctx, srv); err != nil {
			errs = append(errs, err)
		}
	}
	s.proxyTransport.CloseIdleConnections()
	done := make(chan struct{})
	go func() {
		s.streams.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("watches still open: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// goAwayRepeat is how often Shutdown tells HTTP/2 connections again to go
// away while it waits for them.
const goAwayRepeat = 200 * time.Millisecond

// shutdownServer shuts srv down gracefully. x/net/http2 sends GOAWAY to
// the connections it holds when http.Server.Shutdown runs its hooks, and
// only to those: a connection whose TLS handshake ends a moment later (a
// client retrying on a new connection the requests a GOAWAY turned away
// does that) is never told, and holds Shutdown until ctx ends. So the
// hooks run again every goAwayRepeat until the server is down: a Shutdown
// under an ended context closes the (closed) listeners, runs the hooks
// and returns at once, and a connection told twice ignores the second.
func (s *Server) shutdownServer(ctx context.Context, srv *http.Server) error {
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	again, cancel := context.WithCancel(context.Background())
	cancel()
	t := s.clock.NewTicker(goAwayRepeat)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-t.C():
			_ = srv.Shutdown(again)
		}
	}
}

// shuttingDown reports whether Shutdown has begun.
func (s *Server) shuttingDown() bool { return s.stopCtx.Err() != nil }

// authenticate answers 401 unless the request bears a token the
// Authenticator accepts.
func (s *Server) authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := auth.BearerToken(r)
		var (
			id  *auth.Identity
			err error
		)
		proxy := s.fromProxy(r)
		switch {
		case proxy && r.Header.Get(HeaderRemoteUser) != "":
			// Another control plane passes on a request of the user
			// it names (auth_requestheader.go).
			id, ok = proxiedIdentity(r.Header), true
		case ok:
			id, err = s.cfg.Authenticator.Authenticate(r.Context(), tok)
		case proxy:
			// The proxy's certificate is no user's: a request it
			// passes on names the user or bears the user's token.
		default:
			if id, err = auth.CertificateIdentity(r); id != nil || err != nil {
				// A client certificate the handshake verified
				// against the cluster CA stands for a bearer token.
				ok = true
			}
		}
		if (!ok || err != nil || id == nil) && r.ProtoMajor == 2 {
			// An HTTP/2 connection is costly to keep and easy to abuse
			// (rapid reset): one that fails to authenticate goes away,
			// as in Kubernetes.
			goAway(w)
		}
		if !ok {
			WriteError(w, unauthorized("no credentials: send Authorization: Bearer <token> or a client certificate"))
			return
		}
		switch {
		case err != nil && errors.Is(err, auth.ErrUnauthenticated):
			WriteError(w, unauthorized("invalid bearer token"))
			s.log.Debug("authentication failed", "path", r.URL.Path, "err", err)
			return
		case err != nil:
			WriteError(w, fmt.Errorf("authenticate: %w", err))
			return
		case id == nil:
			WriteError(w, unauthorized("invalid bearer token"))
			return
		}
		if id, err = auth.Impersonate(r.Context(), s.cfg.Authorizer, id, r.Header); err != nil {
			WriteError(w, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), id)))
	})
}

// stackSink keeps growStack's frame: the compiler cannot know which byte
// it reads. Nothing writes it.
var stackSink uint32

// growStack makes the goroutine's stack large enough for decoding a body
// and writing it to the store while the stack is still shallow. Each
// request runs on a goroutine of its own, whose stack starts at the
// average size of all goroutines' (small on a server holding thousands of
// quiet watches) and otherwise doubles deep inside the JSON decoder,
// where each doubling copies and adjusts dozens of frames: over a third
// of the decoder's CPU in a 100,000-pod `berth sim`.
//
//go:noinline
func growStack() byte {
	var frame [growStackBytes]byte
	return frame[stackSink%growStackBytes]
}

const growStackBytes = 8 << 10

package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

// Defaults of the server flags (SPEC §2).
const (
	DefaultZone          = "cluster.local"
	DefaultListen        = ":10053"
	DefaultMetricsListen = "127.0.0.1:10055"
	DefaultHealthListen  = "127.0.0.1:8081"
	// DefaultUDPReadBuffer is the receive buffer asked for each UDP
	// socket, so that a burst waits in the kernel instead of being
	// dropped.
	DefaultUDPReadBuffer = 8 << 20
)

// Options configure a Server. The zero value serves cluster.local on
// DefaultListen, forwards to the nameservers of /etc/resolv.conf, and has
// no metrics or health listener.
type Options struct {
	// Zone is the cluster domain (default cluster.local).
	Zone string
	// Listen is the DNS address, UDP and TCP (default :10053); port 0
	// picks a free port, the same for both.
	Listen string
	// Upstream is where names outside the zone go: host[:port], several
	// separated by commas; empty for the nameservers of ResolvConf;
	// UpstreamNone to answer them REFUSED.
	Upstream string
	// ResolvConf is read when Upstream is empty (default /etc/resolv.conf).
	ResolvConf string
	// ForwardTimeout bounds a forwarded question (default 2s); past it the
	// answer is SERVFAIL.
	ForwardTimeout time.Duration
	// MetricsListen serves /metrics; empty serves none.
	MetricsListen string
	// HealthListen serves /healthz; empty serves none.
	HealthListen string
	// UDPReaders is how many UDP sockets share the port (SO_REUSEPORT,
	// where the system has it), each with its own reader; default
	// GOMAXPROCS.
	UDPReaders int
	// UDPReadBuffer is the receive buffer asked for each UDP socket
	// (default 8 MiB).
	UDPReadBuffer int
	// RecursionNetworks are the clients whose names outside the zone are
	// forwarded; any other client is answered REFUSED for them (names in
	// the zone are answered to all). Nil is LocalNetworks(): loopback and
	// this machine's addresses.
	RecursionNetworks []netip.Prefix
	// Clock paces retries of a failed watch and dates changes to the
	// records (the SOA's serial) and the server's DNS cookies.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Informers, if set, feeds the table from the process's shared
	// informers of the store; nil gives the server informers of its own.
	Informers *informer.Factory
}

// Server is berth's cluster DNS: the table following the store, the
// handler answering from it on UDP and TCP, and the metrics and health
// listeners. New binds every listener, so that a port in use fails at
// once; Run serves until its context ends.
type Server struct {
	opts     Options
	log      *slog.Logger
	table    *Table
	handler  *Handler
	metrics  *Metrics
	follower *follower
	// ownInformers is the factory Run starts; nil when it is shared.
	ownInformers *informer.Factory

	udp       []*net.UDPConn
	tcp       net.Listener
	metricsLn net.Listener
	healthLn  net.Listener

	ran       atomic.Bool
	closeOnce sync.Once
}

// New returns a server over a store with its listeners bound. Call Run,
// or Close to release the listeners without serving.
func New(st *store.Store, opts Options) (*Server, error) {
	if opts.Zone == "" {
		opts.Zone = DefaultZone
	}
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if opts.UDPReaders <= 0 {
		opts.UDPReaders = runtime.GOMAXPROCS(0)
	}
	if !reusePort {
		opts.UDPReaders = 1
	}
	if opts.UDPReadBuffer <= 0 {
		opts.UDPReadBuffer = DefaultUDPReadBuffer
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	log := opts.Logger
	table, err := makeTable(opts.Zone, opts.Clock)
	if err != nil {
		return nil, err
	}
	fwd, err := NewForwarder(opts.Upstream, opts.ResolvConf, opts.ForwardTimeout)
	if err != nil {
		if opts.Upstream != "" {
			return nil, err
		}
		// No resolv.conf is no reason to serve no cluster names.
		log.Warn("dns: no upstream; names outside the zone are refused", "err", err)
		fwd = nil
	}
	informers := opts.Informers
	var own *informer.Factory
	if informers == nil {
		informers = informer.NewFactory(st, opts.Clock, log)
		own = informers
	}
	s := &Server{
		opts:         opts,
		log:          log,
		table:        table,
		metrics:      NewMetrics(table.Records),
		follower:     newFollower(informers, table),
		ownInformers: own,
	}
	s.handler = NewHandler(table, fwd, s.metrics)
	s.handler.cookies = newCookieJar(opts.Clock)
	if opts.RecursionNetworks == nil {
		opts.RecursionNetworks = LocalNetworks()
	}
	s.handler.recursion = opts.RecursionNetworks
	if err := s.listen(); err != nil {
		s.Close()
		return nil, err
	}
	upstream := []string{UpstreamNone}
	if fwd != nil {
		upstream = fwd.Servers()
	}
	log.Info("dns: listening", "addr", s.Addr(), "zone", table.Zone(), "upstream", upstream, "recursion_for", opts.RecursionNetworks,
		"udp_readers", len(s.udp), "metrics", s.MetricsAddr(), "health", s.HealthAddr())
	return s, nil
}

// listen binds the DNS sockets and the HTTP listeners.
func (s *Server) listen() error {
	if err := s.listenDNS(); err != nil {
		return err
	}
	var err error
	if s.opts.MetricsListen != "" {
		if s.metricsLn, err = net.Listen("tcp", s.opts.MetricsListen); err != nil {
			return fmt.Errorf("dns metrics listener: %w", err)
		}
	}
	if s.opts.HealthListen != "" {
		if s.healthLn, err = net.Listen("tcp", s.opts.HealthListen); err != nil {
			return fmt.Errorf("dns health listener: %w", err)
		}
	}
	return nil
}

// listenDNS binds TCP and UDP on one port: TCP first, since several UDP
// sockets may share a port (SO_REUSEPORT) but a TCP listener may not, so
// a port another server holds fails here. Port 0 takes the port the first
// UDP socket gets, trying again if TCP has it taken.
func (s *Server) listenDNS() error {
	host, port, err := net.SplitHostPort(s.opts.Listen)
	if err != nil {
		return fmt.Errorf("dns listen %q: %w", s.opts.Listen, err)
	}
	lc := net.ListenConfig{}
	if s.opts.UDPReaders > 1 {
		lc.Control = reusePortControl
	}
	ctx := context.Background()
	if port != "0" {
		if s.tcp, err = net.Listen("tcp", s.opts.Listen); err != nil {
			return fmt.Errorf("dns listen tcp: %w", err)
		}
		pc, err := lc.ListenPacket(ctx, "udp", s.opts.Listen)
		if err != nil {
			return fmt.Errorf("dns listen udp: %w", err)
		}
		s.udp = append(s.udp, pc.(*net.UDPConn))
	} else {
		for attempt := 0; s.tcp == nil; attempt++ {
			pc, err := lc.ListenPacket(ctx, "udp", s.opts.Listen)
			if err != nil {
				return fmt.Errorf("dns listen udp: %w", err)
			}
			p := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
			if s.tcp, err = net.Listen("tcp", net.JoinHostPort(host, p)); err != nil {
				pc.Close()
				if attempt == 10 {
					return fmt.Errorf("dns listen tcp: %w", err)
				}
				continue
			}
			s.udp = append(s.udp, pc.(*net.UDPConn))
		}
	}
	addr := s.udp[0].LocalAddr().String()
	for len(s.udp) < s.opts.UDPReaders {
		pc, err := lc.ListenPacket(ctx, "udp", addr)
		if err != nil {
			return fmt.Errorf("dns listen udp (reader %d): %w", len(s.udp)+1, err)
		}
		s.udp = append(s.udp, pc.(*net.UDPConn))
	}
	for _, c := range s.udp {
		got, err := setReadBuffer(c, s.opts.UDPReadBuffer)
		if err != nil {
			return fmt.Errorf("dns udp receive buffer: %w", err)
		}
		if got < s.opts.UDPReadBuffer {
			s.log.Warn("dns: smaller UDP receive buffer than asked; raise net.core.rmem_max",
				"asked", s.opts.UDPReadBuffer, "got", got)
			break
		}
	}
	return nil
}

// Addr is the DNS address, UDP and TCP, as host:port.
func (s *Server) Addr() string { return s.udp[0].LocalAddr().String() }

// MetricsAddr is the address of /metrics, or "" if none is served.
func (s *Server) MetricsAddr() string { return addrOf(s.metricsLn) }

// HealthAddr is the address of /healthz, or "" if none is served.
func (s *Server) HealthAddr() string { return addrOf(s.healthLn) }

func addrOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// Ready reports whether the server has read the store once and answers
// from it (until then: SERVFAIL).
func (s *Server) Ready() bool { return s.table.Synced() }

// Table returns the record table the server answers from.
func (s *Server) Table() *Table { return s.table }

// Handler returns the server's handler.
func (s *Server) Handler() *Handler { return s.handler }

// Metrics returns the server's collectors.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Close releases the listeners. Run closes them itself when it returns.
func (s *Server) Close() error {
	var errs []error
	s.closeOnce.Do(func() {
		for _, c := range s.udp {
			errs = append(errs, ignoreClosed(c.Close()))
		}
		for _, l := range []net.Listener{s.tcp, s.metricsLn, s.healthLn} {
			if l != nil {
				errs = append(errs, ignoreClosed(l.Close()))
			}
		}
	})
	return errors.Join(errs...)
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// shutdownTimeout bounds how long Run waits for answers in flight.
const shutdownTimeout = 5 * time.Second

// Run follows the store and serves DNS, metrics and health until ctx ends
// or a listener fails. It returns nil when ctx ends. A Server runs once.
// TCP is served by miekg/dns; UDP by the readers of udp.go.
func (s *Server) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("dns: server already run")
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Forwards are waited for last, once no reader can start another.
	var forwards sync.WaitGroup
	defer forwards.Wait()
	var wg sync.WaitGroup
	defer wg.Wait()
	if s.ownInformers != nil {
		s.ownInformers.Start(ctx)
		defer s.ownInformers.Wait()
	}
	wg.Go(func() {
		if err := s.follower.run(ctx); err != nil {
			s.log.Error("dns: not following the store", "err", err)
		}
	})

	handler := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { s.serve(ctx, w, r) })
	type running struct {
		srv     *dns.Server
		started chan struct{}
		done    chan struct{}
	}
	var servers []running
	errc := make(chan error, len(s.udp)+3)
	slots := make(chan struct{}, maxForwards)
	for _, c := range s.udp {
		sock := newUDPSocket(c)
		wg.Go(func() {
			if err := s.serveUDP(ctx, sock, &forwards, slots); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("dns serve udp: %w", err)
			}
		})
	}
	start := func(srv *dns.Server) {
		r := running{srv: srv, started: make(chan struct{}), done: make(chan struct{})}
		srv.NotifyStartedFunc = func() { close(r.started) }
		servers = append(servers, r)
		wg.Go(func() {
			defer close(r.done)
			if err := srv.ActivateAndServe(); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("dns serve: %w", err)
			}
		})
	}
	start(&dns.Server{Listener: s.tcp, Handler: handler})

	var https []*http.Server
	serveHTTP := func(l net.Listener, h http.Handler) {
		if l == nil {
			return
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		https = append(https, srv)
		wg.Go(func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("dns http: %w", err)
			}
		})
	}
	serveHTTP(s.metricsLn, s.metrics.Handler())
	serveHTTP(s.healthLn, HealthHandler(s.Ready))

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer scancel()
	for _, r := range servers {
		select {
		case <-r.started:
			_ = r.srv.ShutdownContext(sctx)
		case <-r.done:
		}
	}
	for _, srv := range https {
		_ = srv.Shutdown(sctx)
	}
	for _, c := range s.udp {
		_ = c.Close() // ends the UDP readers
	}
	return err
}

// serve answers one request; a panic in the handler costs that request a
// SERVFAIL, not the server.
func (s *Server) serve(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("dns: handler panicked", "panic", p)
			m := &dns.Msg{}
			m.SetRcode(r, dns.RcodeServerFailure)
			_ = w.WriteMsg(m)
		}
	}()
	_, _ = s.handler.ServeDNS(ctx, w, r)
}

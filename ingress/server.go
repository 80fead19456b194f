package ingress

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/store/informer"
)

// Config configures the Ingress proxy.
type Config struct {
	// HTTPListen and HTTPSListen are the proxy's addresses; empty serves
	// none on that scheme.
	HTTPListen, HTTPSListen string
	// Informers feed the routing table.
	Informers *informer.Factory
	// Registry, if set, gets the proxy's metrics.
	Registry prometheus.Registerer
	Logger   *slog.Logger
	Clock    clock.PassiveClock
}

// Server is the Ingress proxy: bound by New, serving from Run.
type Server struct {
	cfg      Config
	proxy    *Proxy
	follower *follower
	fallback *tls.Certificate
	http     net.Listener
	https    net.Listener
	// synced is closed once the first table is in use.
	synced     chan struct{}
	syncedOnce sync.Once
}

// New binds the listeners, so that a port in use is an error before Run.
func New(cfg Config) (_ *Server, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m := NewMetrics()
	if cfg.Registry != nil {
		if err := m.Register(cfg.Registry); err != nil {
			return nil, fmt.Errorf("ingress metrics: %w", err)
		}
	}
	s := &Server{cfg: cfg, proxy: NewProxy(m, cfg.Logger, cfg.Clock), follower: newFollower(cfg.Informers), synced: make(chan struct{})}
	if s.fallback, err = SelfSigned(cfg.Clock.Now()); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if cfg.HTTPListen != "" {
		if s.http, err = net.Listen("tcp", cfg.HTTPListen); err != nil {
			return nil, fmt.Errorf("ingress: listen %s: %w", cfg.HTTPListen, err)
		}
	}
	if cfg.HTTPSListen != "" {
		if s.https, err = net.Listen("tcp", cfg.HTTPSListen); err != nil {
			return nil, fmt.Errorf("ingress: listen %s: %w", cfg.HTTPSListen, err)
		}
	}
	return s, nil
}

func (s *Server) close() {
	for _, l := range []net.Listener{s.http, s.https} {
		if l != nil {
			l.Close()
		}
	}
}

// HTTPAddr and HTTPSAddr are the bound addresses, nil when not served.
func (s *Server) HTTPAddr() net.Addr  { return addrOf(s.http) }
func (s *Server) HTTPSAddr() net.Addr { return addrOf(s.https) }

func addrOf(l net.Listener) net.Addr {
	if l == nil {
		return nil
	}
	return l.Addr()
}

// Proxy is the handler, for tests and benchmarks.
func (s *Server) Proxy() *Proxy { return s.proxy }

// Synced is closed once the first table built from the store is in use.
func (s *Server) Synced() <-chan struct{} { return s.synced }

// getCertificate answers SNI from the table, the fallback certificate
// for names it has none for.
func (s *Server) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.proxy.Table().Certificate(hello.ServerName); c != nil {
		return c, nil
	}
	return s.fallback, nil
}

// Run follows the store and serves until ctx ends, then stops taking
// connections and lets requests in flight finish (for up to 10 s).
func (s *Server) Run(ctx context.Context) error {
	remove, err := s.follower.register()
	if err != nil {
		s.close()
		return err
	}
	defer remove()
	s.proxy.SetTable(Build(s.follower.objects()))
	s.syncedOnce.Do(func() { close(s.synced) })
	followCtx, stopFollow := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.follower.follow(followCtx, s.proxy.SetTable) })
	defer func() { stopFollow(); wg.Wait() }()

	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	errLog := slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug)
	var shutdowns []func(context.Context) error
	errc := make(chan error, 2)
	if s.http != nil {
		f := newFront(s.proxy, s.http, protocols, errLog)
		shutdowns = append(shutdowns, f.shutdown)
		go func() { errc <- f.serve() }()
	}
	if s.https != nil {
		hs := &http.Server{Handler: s.proxy, Protocols: protocols, ReadHeaderTimeout: frontHeaderTimeout,
			IdleTimeout: frontIdleTimeout, ErrorLog: errLog,
			TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.getCertificate}}
		shutdowns = append(shutdowns, hs.Shutdown)
		go func() { errc <- hs.ServeTLS(s.https, "", "") }()
	}
	s.cfg.Logger.Info("ingress proxy listening", "http", addrString(s.http), "https", addrString(s.https))
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, shutdown := range shutdowns {
		_ = shutdown(shutdownCtx)
	}
	s.proxy.CloseIdle()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("ingress: %w", serveErr)
	}
	return nil
}

func addrString(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// SelfSigned makes the fallback certificate, served for names no
// Ingress has a Secret for, as ingress-nginx's "Fake Certificate".
func SelfSigned(now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ingress fallback certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("ingress fallback certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"berth"}, CommonName: "berth ingress fallback certificate"},
		DNSNames:     []string{"ingress.local"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("ingress fallback certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// Close releases the listeners of a server that will not Run.
func (s *Server) Close() { s.close() }

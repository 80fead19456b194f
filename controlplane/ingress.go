package controlplane

import (
	"errors"
	"net"
	"syscall"

	"github.com/berth-dev/berth/ingress"
)

// setupIngress binds the Ingress proxy's addresses. An optional proxy
// (the default addresses) that cannot bind them is left off with a
// warning saying how to run it.
func (s *Server) setupIngress() error {
	c := s.cfg.Ingress
	if c == nil {
		return nil
	}
	in, err := ingress.New(ingress.Config{HTTPListen: c.HTTPListen, HTTPSListen: c.HTTPSListen, Informers: s.informers,
		Registry: s.registry, Logger: s.log, Clock: s.cfg.Clock})
	if err != nil {
		if c.Optional && (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EADDRINUSE)) {
			s.log.Warn("ingress proxy off: cannot bind its addresses; run as root, or give --ingress-listen :8080,:8443, or --ingress=false",
				"err", err)
			return nil
		}
		return err
	}
	s.ingress = in
	return nil
}

// Ingress is the Ingress proxy, nil when it is off.
func (s *Server) Ingress() *ingress.Server { return s.ingress }

// ingressAddresses are the addresses Ingresses are served on: the
// proxy's listen host when it is one address, else the API's
// advertised address.
func (s *Server) ingressAddresses() []string {
	if s.ingress == nil {
		return nil
	}
	for _, a := range []net.Addr{s.ingress.HTTPAddr(), s.ingress.HTTPSAddr()} {
		if ta, ok := a.(*net.TCPAddr); ok && !ta.IP.IsUnspecified() {
			return []string{ta.IP.String()}
		}
	}
	addr, _ := s.apiEndpoint()
	return []string{addr.String()}
}

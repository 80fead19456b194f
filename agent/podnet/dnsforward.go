package podnet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// DefaultUpstreamTimeout bounds one query to the cluster DNS server.
const DefaultUpstreamTimeout = 2 * time.Second

// Gateway is the pod bridge's address in podCIDR, its first address, where
// pods find their router and their nameserver.
func Gateway(podCIDR string) (netip.Addr, error) {
	p, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	p = p.Masked()
	if p.Bits() > p.Addr().BitLen()-2 {
		return netip.Addr{}, fmt.Errorf("pod CIDR %q: too small for pods", podCIDR)
	}
	return p.Addr().Next(), nil
}

// DNSForwarder is the node-local DNS server pods name in their
// resolv.conf, as NodeLocal DNSCache is: it listens on the pod bridge's
// gateway address, port 53, UDP and TCP, and forwards each query to the
// cluster DNS server, which pods cannot reach themselves (it listens on
// the control plane's own port). A query that came over TCP, or whose UDP
// answer was truncated, goes upstream over TCP.
type DNSForwarder struct {
	upstream string
	udp, tcp *dns.Client
	log      *slog.Logger

	mu      sync.Mutex
	servers []*dns.Server
	wg      sync.WaitGroup
}

// NewDNSForwarder forwards to upstream (host:port).
func NewDNSForwarder(upstream string, log *slog.Logger) *DNSForwarder {
	if log == nil {
		log = slog.Default()
	}
	return &DNSForwarder{
		upstream: upstream,
		udp:      &dns.Client{Net: "udp", Timeout: DefaultUpstreamTimeout},
		tcp:      &dns.Client{Net: "tcp", Timeout: DefaultUpstreamTimeout},
		log:      log,
	}
}

// Start listens on addr (the gateway address and port 53) over UDP and
// TCP and serves until Stop. The sockets are bound with IP_FREEBIND, so
// the forwarder may start before the bridge that will hold the address
// exists: it answers from the moment the address is up.
func (f *DNSForwarder) Start(addr netip.AddrPort) error {
	lc := net.ListenConfig{Control: freebind}
	pc, err := lc.ListenPacket(context.Background(), "udp", addr.String())
	if err != nil {
		return fmt.Errorf("node-local DNS: listen udp %s: %w", addr, err)
	}
	l, err := lc.Listen(context.Background(), "tcp", addr.String())
	if err != nil {
		pc.Close()
		return fmt.Errorf("node-local DNS: listen tcp %s: %w", addr, err)
	}
	f.StartOn(pc, l)
	return nil
}

// StartOn serves on sockets the caller opened (a test's, in a network
// namespace of its own). It returns once both servers serve, so that a
// Stop right after it stops them.
func (f *DNSForwarder) StartOn(pc net.PacketConn, l net.Listener) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := dns.HandlerFunc(f.serve)
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: l, Handler: h}} {
		var once sync.Once
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { once.Do(func() { close(started) }) }
		f.servers = append(f.servers, s)
		f.wg.Go(func() {
			defer once.Do(func() { close(started) })
			if err := s.ActivateAndServe(); err != nil {
				f.log.Warn("node-local DNS stopped", "err", err)
			}
		})
		<-started
	}
}

// Stop closes the sockets and waits for the servers to end.
func (f *DNSForwarder) Stop() {
	f.mu.Lock()
	servers := f.servers
	f.servers = nil
	f.mu.Unlock()
	for _, s := range servers {
		if err := s.Shutdown(); err != nil {
			// Not serving (it failed to start): close its socket, so
			// nothing is left open.
			if s.PacketConn != nil {
				s.PacketConn.Close()
			}
			if s.Listener != nil {
				s.Listener.Close()
			}
		}
	}
	f.wg.Wait()
}

// serve forwards one query and writes the answer back, or SERVFAIL when the
// cluster DNS server cannot be reached.
func (f *DNSForwarder) serve(w dns.ResponseWriter, r *dns.Msg) {
	resp, err := f.exchange(r, w.LocalAddr().Network() == "tcp")
	if err != nil {
		f.log.Debug("node-local DNS: upstream failed", "upstream", f.upstream, "err", err)
		resp = new(dns.Msg)
		resp.SetRcode(r, dns.RcodeServerFailure)
	}
	resp.Id = r.Id
	if w.LocalAddr().Network() != "tcp" {
		// The client's buffer, as its EDNS0 record or the 512 bytes of
		// plain DNS say, bounds a UDP answer.
		size := dns.MinMsgSize
		if o := r.IsEdns0(); o != nil {
			size = max(size, int(o.UDPSize()))
		}
		resp.Truncate(size)
	}
	_ = w.WriteMsg(resp)
}

func (f *DNSForwarder) exchange(r *dns.Msg, overTCP bool) (*dns.Msg, error) {
	if !overTCP {
		resp, _, err := f.udp.Exchange(r, f.upstream)
		if err == nil && !resp.Truncated {
			return resp, nil
		}
	}
	resp, _, err := f.tcp.Exchange(r, f.upstream)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// UpstreamNone is the --dns-upstream value that turns forwarding off:
// names outside the zone are answered REFUSED.
const UpstreamNone = "none"

// DefaultResolvConf is where the upstream comes from when none is given.
const DefaultResolvConf = "/etc/resolv.conf"

// DefaultForwardTimeout bounds one forwarded question, every upstream
// tried included.
const DefaultForwardTimeout = 2 * time.Second

// Forwarder sends questions outside the zone to upstream servers: over UDP
// first, again over TCP when the UDP answer comes back truncated. Servers
// are tried in order until one answers.
type Forwarder struct {
	servers []string // host:port
	timeout time.Duration
	udp     *dns.Client
	tcp     *dns.Client
}

// NewForwarder returns a forwarder to upstream: a comma-separated list of
// host or host:port (port 53 by default), empty for the nameservers of the
// resolv.conf file, or UpstreamNone for no forwarding, in which case it
// returns nil.
func NewForwarder(upstream, resolvConf string, timeout time.Duration) (*Forwarder, error) {
	if timeout <= 0 {
		timeout = DefaultForwardTimeout
	}
	var servers []string
	switch strings.TrimSpace(upstream) {
	case UpstreamNone:
		return nil, nil
	case "":
		if resolvConf == "" {
			resolvConf = DefaultResolvConf
		}
		cfg, err := dns.ClientConfigFromFile(resolvConf)
		if err != nil {
			return nil, fmt.Errorf("dns upstream from %s: %w", resolvConf, err)
		}
		for _, s := range cfg.Servers {
			servers = append(servers, net.JoinHostPort(s, cfg.Port))
		}
		if len(servers) == 0 {
			return nil, fmt.Errorf("dns upstream: %s lists no nameserver", resolvConf)
		}
	default:
		for _, s := range strings.Split(upstream, ",") {
			addr, err := upstreamAddr(strings.TrimSpace(s))
			if err != nil {
				return nil, err
			}
			servers = append(servers, addr)
		}
	}
	return &Forwarder{
		servers: servers,
		timeout: timeout,
		udp:     &dns.Client{Net: "udp", Timeout: timeout},
		tcp:     &dns.Client{Net: "tcp", Timeout: timeout},
	}, nil
}

// upstreamAddr turns "1.1.1.1", "1.1.1.1:5353", "::1" or "[::1]:53" into
// host:port.
func upstreamAddr(s string) (string, error) {
	if s == "" {
		return "", errors.New("dns upstream: empty server in the list")
	}
	if host, port, err := net.SplitHostPort(s); err == nil {
		if host == "" || port == "" {
			return "", fmt.Errorf("dns upstream %q: want host or host:port", s)
		}
		return s, nil
	}
	return net.JoinHostPort(strings.Trim(s, "[]"), "53"), nil
}

// Servers returns the upstream addresses, in the order they are tried.
func (f *Forwarder) Servers() []string { return append([]string(nil), f.servers...) }

// Exchange forwards a question and returns the upstream's answer, with the
// question's ID. It fails when no upstream answers within the timeout.
func (f *Forwarder) Exchange(ctx context.Context, r *dns.Msg) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	// A fresh ID of our own: the client's may be guessable. The sections
	// are shared, not changed.
	q := *r
	q.Id = dns.Id()
	var errs []error
	for _, server := range f.servers {
		resp, _, err := f.udp.ExchangeContext(ctx, &q, server)
		if err == nil && resp.Truncated {
			resp, _, err = f.tcp.ExchangeContext(ctx, &q, server)
		}
		if err == nil {
			resp.Id = r.Id
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", server, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("dns forward: %w", errors.Join(errs...))
}

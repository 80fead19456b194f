package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// UDP is served by berth's own read loop rather than miekg/dns's server,
// which unpacks every datagram into a message and starts a goroutine for
// it: that was half of the server's time once answers were packed ahead.
// Each socket has a few reader goroutines that answer the plain queries
// of the cluster straight from the bytes (parseQuery, Handler.fast) and
// hand every other datagram, unpacked, to Handler.ServeDNS; questions to
// forward get a goroutine of their own, so that a slow upstream never
// holds a reader.

// readersPerSocket is how many goroutines read each UDP socket: while one
// answers, another waits in the kernel.
const readersPerSocket = 2

// maxForwards bounds the forwarded questions in flight over UDP; past it
// the answer is SERVFAIL rather than another goroutine.
const maxForwards = 4096

// udpScratch is one reader's buffers, reused for every datagram.
type udpScratch struct {
	raw  []byte
	oob  []byte
	name [256]byte
	out  []byte
}

func newUDPScratch() *udpScratch {
	return &udpScratch{
		raw: make([]byte, dns.MaxMsgSize),
		oob: make([]byte, 128),
		out: make([]byte, 0, dns.MaxMsgSize+1),
	}
}

// udpSocket is one UDP socket of the server.
type udpSocket struct {
	conn *net.UDPConn
	// pktinfo: the socket is bound to a wildcard address, so every answer
	// must leave from the address its question came to.
	pktinfo bool
}

func newUDPSocket(conn *net.UDPConn) *udpSocket {
	s := &udpSocket{conn: conn}
	if ap, err := netip.ParseAddrPort(conn.LocalAddr().String()); err == nil && ap.Addr().IsUnspecified() {
		// As miekg/dns does: either family may refuse; where both do,
		// answers leave from the address the system picks.
		err6 := ipv6.NewPacketConn(conn).SetControlMessage(ipv6.FlagDst|ipv6.FlagInterface, true)
		err4 := ipv4.NewPacketConn(conn).SetControlMessage(ipv4.FlagDst|ipv4.FlagInterface, true)
		s.pktinfo = err4 == nil || err6 == nil
	}
	return s
}

// udpWriter answers one datagram: a dns.ResponseWriter over the socket.
type udpWriter struct {
	sock *udpSocket
	peer netip.AddrPort
	// src is the control message that sets the answer's source address,
	// for a socket on a wildcard address.
	src []byte
}

func (w *udpWriter) LocalAddr() net.Addr  { return w.sock.conn.LocalAddr() }
func (w *udpWriter) RemoteAddr() net.Addr { return net.UDPAddrFromAddrPort(w.peer) }
func (w *udpWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
func (w *udpWriter) Write(b []byte) (int, error) {
	n, _, err := w.sock.conn.WriteMsgUDPAddrPort(b, w.src, w.peer)
	return n, err
}
func (w *udpWriter) Close() error        { return nil }
func (w *udpWriter) TsigStatus() error   { return nil }
func (w *udpWriter) TsigTimersOnly(bool) {}
func (w *udpWriter) Hijack()             {}

// read waits for the next datagram.
func (s *udpSocket) read(sc *udpScratch, w *udpWriter) (int, error) {
	n, oobn, _, peer, err := s.conn.ReadMsgUDPAddrPort(sc.raw, sc.oob)
	if err != nil {
		return 0, err
	}
	*w = udpWriter{sock: s, peer: peer}
	if s.pktinfo {
		w.src = sourceControl(sc.oob[:oobn])
	}
	return n, nil
}

// sourceControl turns the control message that says where a datagram
// went into one that sends the answer from there.
func sourceControl(oob []byte) []byte {
	cm6 := new(ipv6.ControlMessage)
	if cm6.Parse(oob) == nil && cm6.Dst != nil && cm6.Dst.To4() == nil {
		return (&ipv6.ControlMessage{Src: cm6.Dst}).Marshal()
	}
	cm4 := new(ipv4.ControlMessage)
	if cm4.Parse(oob) == nil && cm4.Dst != nil {
		return (&ipv4.ControlMessage{Src: cm4.Dst}).Marshal()
	}
	return nil
}

// serveUDP runs a socket's readers until the socket is closed.
func (s *Server) serveUDP(ctx context.Context, sock *udpSocket, forwards *sync.WaitGroup, slots chan struct{}) error {
	var wg sync.WaitGroup
	errc := make(chan error, readersPerSocket)
	for range readersPerSocket {
		wg.Go(func() { errc <- s.readUDP(ctx, sock, forwards, slots) })
	}
	wg.Wait()
	close(errc)
	var err error
	for e := range errc {
		err = errors.Join(err, e)
	}
	return err
}

func (s *Server) readUDP(ctx context.Context, sock *udpSocket, forwards *sync.WaitGroup, slots chan struct{}) error {
	sc := newUDPScratch()
	var w udpWriter
	for {
		n, err := sock.read(sc, &w)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Warn("dns: reading UDP", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if !s.servePacket(ctx, &w, sc.raw[:n], sc) {
			continue
		}
		// Forward from a goroutine of its own, with copies of what the
		// reader reuses.
		select {
		case slots <- struct{}{}:
		default:
			s.handler.overloaded(&w, sc.raw[:n], sc.out[:0])
			continue
		}
		raw, fw := append([]byte(nil), sc.raw[:n]...), w
		forwards.Go(func() {
			defer func() { <-slots }()
			m := new(dns.Msg)
			if m.Unpack(raw) == nil {
				s.serve(ctx, &fw, m)
			}
		})
	}
}

// servePacket is Handler.servePacket, where a panic costs the datagram
// its answer, not the server its reader.
func (s *Server) servePacket(ctx context.Context, w *udpWriter, raw []byte, sc *udpScratch) (forward bool) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("dns: handler panicked", "panic", p, "packet", fmt.Sprintf("%x", raw))
			forward = false
		}
	}()
	return s.handler.servePacket(ctx, w, raw, sc)
}

// servePacket answers a datagram: a plain query whose answer the table
// holds packed straight from the bytes, any other through ServeDNS. It
// returns true, having written nothing, for a question to forward, which
// the caller serves with ServeDNS from a goroutine of its own.
func (h *Handler) servePacket(ctx context.Context, w dns.ResponseWriter, raw []byte, sc *udpScratch) (forward bool) {
	start := time.Now()
	if q, ok := parseQuery(raw, sc.name[:]); ok {
		ans := h.table.resolve(q.name, q.qtype) // parseQuery lowered the name
		if h.upstream(&ans) && h.recurses(clientOf(w)) {
			return true
		}
		// parseQuery takes no request with a cookie: the answer's size is
		// a cookieless one's.
		if out, ok := h.fast(sc.out[:0], &q, &ans, udpSize(q.edns, q.udpSize, false)); ok && !h.general {
			_ = h.write(w, out)
			if h.metrics != nil {
				h.metrics.observe(q.qtype, ans.Rcode, time.Since(start))
			}
			return false
		}
	}
	m := new(dns.Msg)
	if err := m.Unpack(raw); err != nil {
		if out := formErr(sc.out[:0], raw); out != nil {
			_ = h.write(w, out)
			if h.metrics != nil {
				h.metrics.observe(0, dns.RcodeFormatError, time.Since(start))
			}
		}
		return false
	}
	if h.forwards(m) && h.recurses(clientOf(w)) {
		return true
	}
	_, _ = h.ServeDNS(ctx, w, m)
	return false
}

// forwards reports whether ServeDNS would send r to the upstream.
func (h *Handler) forwards(r *dns.Msg) bool {
	if h.forward == nil || r.Response || r.Opcode != dns.OpcodeQuery || len(r.Question) != 1 {
		return false
	}
	if opt := r.IsEdns0(); opt != nil && opt.Version() != 0 {
		return false
	}
	ans := h.table.Lookup(r.Question[0].Name, r.Question[0].Qtype)
	return h.upstream(&ans)
}

// overloaded answers SERVFAIL to a question to forward when too many are
// in flight already.
func (h *Handler) overloaded(w dns.ResponseWriter, raw, buf []byte) {
	m := new(dns.Msg)
	if m.Unpack(raw) != nil || len(m.Question) != 1 {
		return
	}
	out, err := h.reply(m, m.IsEdns0(), nil, dns.RcodeServerFailure).PackBuffer(buf[:cap(buf)])
	if err == nil {
		_ = h.write(w, out)
	}
	if h.metrics != nil {
		h.metrics.observe(m.Question[0].Qtype, dns.RcodeServerFailure, 0)
	}
}

package dns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
	"k8s.io/utils/clock"
)

// advertisedUDPSize is the UDP payload size berth's answers advertise in
// their OPT record: what it reads, and the most it sends.
const advertisedUDPSize = dns.DefaultMsgSize

// udpSize is the size an answer over UDP may take: 512 bytes without
// EDNS0; with it the asker's buffer, taken as 512 when smaller and, as RFC
// 6891 has a responder do, as the buffer berth advertises when larger (a
// client may advertise 65,535 bytes, more than a datagram holds), and at
// most cookielessUDPSize unless the asker showed a valid server cookie.
func udpSize(edns bool, size uint16, cookie bool) int {
	if !edns {
		return dns.MinMsgSize
	}
	limit := min(max(int(size), dns.MinMsgSize), advertisedUDPSize)
	if !cookie {
		limit = min(limit, cookielessUDPSize)
	}
	return limit
}

// Handler answers DNS requests: names in the zone from the table, others
// through the forwarder (REFUSED without one). Its two methods are CoreDNS's
// plugin.Handler. Server serves it over TCP through miekg/dns, and over UDP
// through its own readers (udp.go), which answer most datagrams from the
// bytes and hand it the rest.
type Handler struct {
	table   *Table
	forward *Forwarder
	metrics *Metrics
	// recursion are the clients names outside the zone are forwarded
	// for; nil forwards for everyone.
	recursion []netip.Prefix
	// cookies makes and checks DNS cookies (cookie.go).
	cookies *cookieJar
	// general turns the fast path off, for tests that compare the two.
	general bool
}

// NewHandler returns a handler over a table. forward may be nil (no
// forwarding: REFUSED) and so may metrics.
func NewHandler(t *Table, forward *Forwarder, metrics *Metrics) *Handler {
	return &Handler{table: t, forward: forward, metrics: metrics, cookies: newCookieJar(clock.RealClock{})}
}

// Name names the handler, as a CoreDNS plugin is named.
func (h *Handler) Name() string { return "berth" }

// ServeDNS answers one request and writes the answer to w. It returns the
// answer's rcode, and an error only when the answer could not be packed
// or written. A request that must not be answered (a response, say) is
// dropped: nothing is written.
func (h *Handler) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	start := time.Now()
	bp := packBuffers.Get().(*[]byte)
	defer packBuffers.Put(bp)
	a := h.askerOf(w)
	data, rcode, err := h.answer(ctx, r, &a, (*bp)[:0])
	if data == nil && err == nil {
		return dns.RcodeSuccess, nil
	}
	if err == nil {
		err = h.write(w, data)
	}
	if h.metrics != nil {
		var qtype uint16
		if len(r.Question) > 0 {
			qtype = r.Question[0].Qtype
		}
		h.metrics.observe(qtype, rcode, time.Since(start))
	}
	if err != nil {
		return rcode, fmt.Errorf("dns %s: answer: %w", h.Name(), err)
	}
	return rcode, nil
}

// answer computes the answer to r in wire form, packed into buf (empty,
// with room for the largest message); nil without an error means drop it.
func (h *Handler) answer(ctx context.Context, r *dns.Msg, a *asker, buf []byte) ([]byte, int, error) {
	m, packed, rcode := h.respond(ctx, r, a, buf)
	if m == nil {
		return packed, rcode, nil
	}
	data, err := m.PackBuffer(buf[:cap(buf)])
	if err != nil {
		return nil, dns.RcodeServerFailure, err
	}
	return data, m.Rcode, nil
}

// respond computes the answer to r: a message to pack, or, when the fast
// path answered, the answer written into buf and its rcode. Neither means
// drop r.
func (h *Handler) respond(ctx context.Context, r *dns.Msg, a *asker, buf []byte) (m *dns.Msg, packed []byte, rcode int) {
	if r.Response {
		return nil, nil, 0
	}
	opt := r.IsEdns0()
	if opt != nil {
		a.cookie = h.cookies.read(opt, a.from)
	}
	switch {
	case r.Opcode != dns.OpcodeQuery:
		return h.reply(r, opt, a, dns.RcodeNotImplemented), nil, 0
	case len(r.Question) != 1 || a.cookie.malformed:
		return h.reply(r, opt, a, dns.RcodeFormatError), nil, 0
	case opt != nil && opt.Version() != 0:
		return h.reply(r, opt, a, dns.RcodeBadVers), nil, 0
	}
	size := dns.MaxMsgSize
	switch {
	case a.udp && opt != nil:
		size = udpSize(true, opt.UDPSize(), a.cookie.valid)
	case a.udp:
		size = udpSize(false, 0, false)
	}

	q := r.Question[0]
	ans := h.table.Lookup(q.Name, q.Qtype)
	if ans.Forward {
		if !a.recurse {
			return h.reply(r, opt, a, dns.RcodeRefused), nil, 0
		}
		return h.forwarded(ctx, r, opt, a, size), nil, 0
	}
	if ans.Rcode == dns.RcodeSuccess && (q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY ||
		q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR) {
		return h.reply(r, opt, a, dns.RcodeRefused), nil, 0
	}
	if ans.Chase != "" && h.forward != nil && a.recurse {
		return h.chased(ctx, r, opt, a, size, &ans), nil, 0
	}
	if fq, ok := queryOf(r); ok && !h.general {
		if out, ok := h.fast(buf, &fq, &ans, size); ok {
			return nil, out, ans.Rcode
		}
	}

	m = h.reply(r, opt, a, ans.Rcode)
	m.Authoritative = ans.Authoritative
	m.Answer, m.Ns = ans.Answer, ans.Ns
	if len(ans.Extra) > 0 {
		if opt == nil {
			m.Extra = ans.Extra
		} else {
			// The OPT record goes last, and Truncate moves it: the table's
			// slice must not be written to.
			extra := make([]dns.RR, 0, len(ans.Extra)+1)
			m.Extra = append(append(extra, ans.Extra...), m.Extra[0])
		}
	}
	m.Truncate(size)
	return m, nil, 0
}

// write sends an answer, counting it in the metrics if it cannot be sent
// (too large a datagram, say): nobody else hears of a lost UDP answer.
func (h *Handler) write(w dns.ResponseWriter, b []byte) error {
	_, err := w.Write(b)
	if err != nil && h.metrics != nil {
		h.metrics.writeFailures.Inc()
	}
	return err
}

// reply starts an answer to r with an rcode: the question echoed and, if r
// had one, an OPT record of the answer's own, with a server cookie when r
// brought a client cookie.
func (h *Handler) reply(r *dns.Msg, opt *dns.OPT, a *asker, rcode int) *dns.Msg {
	m := &dns.Msg{}
	m.Id = r.Id
	m.Response = true
	m.Opcode = r.Opcode
	if r.Opcode == dns.OpcodeQuery {
		m.RecursionDesired = r.RecursionDesired
		m.CheckingDisabled = r.CheckingDisabled
		m.RecursionAvailable = h.forward != nil
		if len(r.Question) == 1 {
			m.Question = r.Question
		}
	}
	m.Rcode = rcode
	if opt != nil {
		o := newOPT(opt.Do())
		if a != nil && a.cookie.client != nil {
			o.Option = append(o.Option, h.cookies.option(a.cookie.client, a.from))
		}
		m.Extra = []dns.RR{o}
	}
	return m
}

// newOPT is a fresh OPT record for an answer: packing writes the extended
// rcode into it, so it is never shared. The DO bit is echoed (RFC 3225).
func newOPT(do bool) *dns.OPT {
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	o.SetUDPSize(advertisedUDPSize)
	if do {
		o.SetDo()
	}
	return o
}

// forwarded answers a name outside the zone from the upstream.
// The asker's cookie is berth's to answer, not the upstream's: it is
// taken out of the question and the upstream's out of the answer, which
// gets berth's own.
func (h *Handler) forwarded(ctx context.Context, r *dns.Msg, opt *dns.OPT, a *asker, size int) *dns.Msg {
	if h.forward == nil {
		return h.reply(r, opt, a, dns.RcodeRefused)
	}
	if h.metrics != nil {
		h.metrics.forwarded.Inc()
	}
	q := r
	if a.cookie.client != nil {
		q = r.Copy()
		dropCookie(q.IsEdns0())
	}
	resp, err := h.forward.Exchange(ctx, q)
	if err != nil {
		return h.reply(r, opt, a, dns.RcodeServerFailure)
	}
	if o := resp.IsEdns0(); o != nil {
		dropCookie(o)
		if a.cookie.client != nil {
			o.Option = append(o.Option, h.cookies.option(a.cookie.client, a.from))
		}
	}
	resp.Truncate(size)
	return resp
}

// dropCookie takes the COOKIE option out of an OPT record.
func dropCookie(o *dns.OPT) {
	if o == nil {
		return
	}
	o.Option = slices.DeleteFunc(o.Option, func(e dns.EDNS0) bool { return e.Option() == dns.EDNS0COOKIE })
}

// chased answers a name whose CNAMEs leave the zone, as CoreDNS's
// kubernetes plugin answers an ExternalName service through its upstream:
// the CNAMEs, then the upstream's answer for their target; its rcode, and
// its authority section when it has no answer (NXDOMAIN, NODATA). An
// upstream that fails, or answers neither NOERROR nor NXDOMAIN, makes the
// answer SERVFAIL, as a forwarded question's would be.
func (h *Handler) chased(ctx context.Context, r *dns.Msg, opt *dns.OPT, a *asker, size int, ans *Answer) *dns.Msg {
	if h.metrics != nil {
		h.metrics.forwarded.Inc()
	}
	q := new(dns.Msg)
	q.SetQuestion(ans.Chase, r.Question[0].Qtype)
	q.SetEdns0(advertisedUDPSize, false)
	resp, err := h.forward.Exchange(ctx, q)
	if err != nil || resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
		return h.reply(r, opt, a, dns.RcodeServerFailure)
	}
	m := h.reply(r, opt, a, resp.Rcode)
	m.Authoritative = true
	m.Answer = slices.Concat(ans.Answer, resp.Answer)
	if len(resp.Answer) == 0 {
		m.Ns = resp.Ns
	}
	m.Truncate(size)
	return m
}

// upstream reports whether an answer needs the upstream: a name outside
// the zone, or CNAMEs that leave it. Without a forwarder neither does.
func (h *Handler) upstream(ans *Answer) bool {
	return h.forward != nil && (ans.Forward || ans.Chase != "")
}

// packBuffers hold room for the largest message, so packing allocates
// nothing.
var packBuffers = sync.Pool{New: func() any {
	b := make([]byte, dns.MaxMsgSize+1)
	return &b
}}

func isUDP(w dns.ResponseWriter) bool {
	_, ok := w.LocalAddr().(*net.UDPAddr)
	return ok
}

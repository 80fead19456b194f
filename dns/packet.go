package dns

import (
	"encoding/binary"
	"strings"
	"unsafe"

	"github.com/miekg/dns"
)

// query is what the fast path needs of a request: read straight from a
// datagram (parseQuery), or from a message miekg/dns unpacked (queryOf).
type query struct {
	id     uint16
	rd, cd bool
	// name is the question's name in presentation form, without escapes;
	// from parseQuery, already in lower case.
	name          string
	qtype, qclass uint16
	// question is the question's bytes as they came, when read from a
	// datagram: the answer repeats them.
	question []byte
	edns     bool
	do       bool
	udpSize  uint16
}

// queryOf reads a query from a message, if it is a plain one the fast path
// may answer: one question, no records but an OPT of version 0 without
// options (a cookie, say, which the general path answers), and a name
// without escapes.
func queryOf(r *dns.Msg) (query, bool) {
	if r.Response || r.Opcode != dns.OpcodeQuery || len(r.Question) != 1 || len(r.Answer) > 0 || len(r.Ns) > 0 || len(r.Extra) > 1 {
		return query{}, false
	}
	q := r.Question[0]
	if strings.IndexByte(q.Name, '\\') >= 0 || !strings.HasSuffix(q.Name, ".") || strings.Contains(q.Name, "..") {
		return query{}, false
	}
	out := query{id: r.Id, rd: r.RecursionDesired, cd: r.CheckingDisabled, name: q.Name, qtype: q.Qtype, qclass: q.Qclass}
	if len(r.Extra) == 1 {
		opt, ok := r.Extra[0].(*dns.OPT)
		if !ok || opt.Version() != 0 || opt.Hdr.Name != "." || len(opt.Option) > 0 {
			return query{}, false
		}
		out.edns, out.do, out.udpSize = true, opt.Do(), opt.UDPSize()
	}
	return out, true
}

// DNS header bits.
const (
	bitQR     = 1 << 15
	bitAA     = 1 << 10
	bitRD     = 1 << 8
	bitRA     = 1 << 7
	bitCD     = 1 << 4
	opcodeMsk = 0xF << 11
)

// parseQuery reads a plain query straight from a datagram: one question
// whose labels are letters, digits, '-' and '_' (so that its presentation
// form has no escapes), no records but an OPT of version 0 without options
// at the end, and nothing after. It writes the name, in lower case, into scratch (at least
// 256 bytes) and q.name refers to it: q.name is valid only until scratch is
// reused. Any other packet is left to miekg/dns.
func parseQuery(raw, scratch []byte) (q query, ok bool) {
	if len(raw) < 12+1+4 {
		return q, false
	}
	flags := binary.BigEndian.Uint16(raw[2:])
	if flags&bitQR != 0 || flags&opcodeMsk != 0 ||
		binary.BigEndian.Uint16(raw[4:]) != 1 || // questions
		binary.BigEndian.Uint16(raw[6:]) != 0 || // answers
		binary.BigEndian.Uint16(raw[8:]) != 0 { // authority
		return q, false
	}
	arcount := binary.BigEndian.Uint16(raw[10:])
	if arcount > 1 {
		return q, false
	}
	// The name.
	off, n := 12, 0
	for {
		if off >= len(raw) {
			return q, false
		}
		l := int(raw[off])
		off++
		if l == 0 {
			break
		}
		if l > 63 || off+l > len(raw) || n+l+1 > 254 {
			return q, false // also compression pointers: no name in a question needs one
		}
		for _, c := range raw[off : off+l] {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			default:
				return q, false
			}
			scratch[n] = c
			n++
		}
		scratch[n] = '.'
		n++
		off += l
	}
	if n == 0 {
		return q, false // the root
	}
	if off+4 > len(raw) {
		return q, false
	}
	q.qtype = binary.BigEndian.Uint16(raw[off:])
	q.qclass = binary.BigEndian.Uint16(raw[off+2:])
	q.question = raw[12 : off+4]
	off += 4
	if arcount == 1 {
		// An OPT record: root name, type, UDP size, extended rcode,
		// version and flags, options.
		if off+11 > len(raw) || raw[off] != 0 || binary.BigEndian.Uint16(raw[off+1:]) != dns.TypeOPT {
			return q, false
		}
		q.udpSize = binary.BigEndian.Uint16(raw[off+3:])
		ttl := binary.BigEndian.Uint32(raw[off+5:])
		if ttl>>16&0xFF != 0 { // version
			return q, false
		}
		q.edns, q.do = true, ttl&(1<<15) != 0
		if binary.BigEndian.Uint16(raw[off+9:]) != 0 {
			return q, false // options (a cookie, say) are the general path's
		}
		off += 11
	}
	if off != len(raw) {
		return q, false
	}
	q.id = binary.BigEndian.Uint16(raw)
	q.rd, q.cd = flags&bitRD != 0, flags&bitCD != 0
	q.name = unsafe.String(&scratch[0], n)
	return q, true
}

// formErr writes a FORMERR answer to a request that does not unpack, as
// miekg/dns's server does: the header alone. A datagram too short for a
// header, or a response, gets nothing.
func formErr(buf, raw []byte) []byte {
	if len(raw) < 12 || binary.BigEndian.Uint16(raw[2:])&bitQR != 0 {
		return nil
	}
	buf = append(buf[:0], raw[0], raw[1])
	flags := binary.BigEndian.Uint16(raw[2:])&opcodeMsk | bitQR | dns.RcodeFormatError
	buf = binary.BigEndian.AppendUint16(buf, flags)
	return append(buf, 0, 0, 0, 0, 0, 0, 0, 0)
}

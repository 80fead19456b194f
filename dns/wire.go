package dns

import (
	"encoding/binary"
	"strings"

	"github.com/miekg/dns"
)

// The fast path. Most questions a cluster asks are answered by records
// the table holds whole, and packing them name by name was a third of the
// server's time. So each record set is also kept packed, as the sections
// of an answer follow its question, and an answer is the request's header
// and question bytes with those sections after them. Compression pointers
// in the packed sections point into the question (at offset 12, always)
// or back into the sections themselves, and stay right because the
// question's name differs from the owner name at most in case; answers
// thus come back in the asker's case, as most servers answer. Negative
// answers point their SOA at the zone's suffix of the question, wherever
// it starts. Anything else (ANY, truncation, odd requests) takes the
// general path through miekg/dns.

// wire is an answer's sections packed for a question that names the owner.
type wire struct {
	body       []byte
	an, ns, ar uint16
}

// packWire packs sections for a question (owner, qtype). owner must be in
// canonical form (lower case, no escapes). It returns nil if they do not
// pack, which leaves those answers to the general path.
func packWire(owner string, qtype uint16, answer, ns, extra []dns.RR) *wire {
	if strings.IndexByte(owner, '\\') >= 0 {
		return nil
	}
	m := &dns.Msg{Compress: true, Question: []dns.Question{{Name: owner, Qtype: qtype, Qclass: dns.ClassINET}}}
	m.Answer, m.Ns, m.Extra = answer, ns, extra
	b, err := m.Pack()
	if err != nil {
		return nil
	}
	start := questionEnd(owner)
	return &wire{
		body: append([]byte(nil), b[start:]...),
		an:   uint16(len(answer)), ns: uint16(len(ns)), ar: uint16(len(extra)),
	}
}

// questionEnd is where the sections start after the question of a name
// without escapes: header, name, type and class.
func questionEnd(name string) int { return 12 + wireNameLen(name) + 4 }

// wireNameLen is the packed length of a fully qualified name without
// escapes: one length byte per label plus the root.
func wireNameLen(name string) int {
	if name == "." {
		return 1
	}
	return len(name) + 1
}

// soaWire is the zone's SOA record packed with its three names pointing at
// the zone; put writes it for a zone name at a given offset.
type soaWire struct {
	rr []byte
}

func newSOAWire(soa *dns.SOA) soaWire {
	b := make([]byte, 0, 64)
	b = append(b, 0xC0, 0) // owner: the zone
	b = binary.BigEndian.AppendUint16(b, dns.TypeSOA)
	b = binary.BigEndian.AppendUint16(b, dns.ClassINET)
	b = binary.BigEndian.AppendUint32(b, soa.Hdr.Ttl)
	b = binary.BigEndian.AppendUint16(b, 0) // rdlength, below
	rdata := len(b)
	b = append(b, 2, 'n', 's', 3, 'd', 'n', 's', 0xC0, 0)
	b = append(b, 10, 'h', 'o', 's', 't', 'm', 'a', 's', 't', 'e', 'r', 0xC0, 0)
	for _, v := range []uint32{soa.Serial, soa.Refresh, soa.Retry, soa.Expire, soa.Minttl} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	binary.BigEndian.PutUint16(b[rdata-2:], uint16(len(b)-rdata))
	return soaWire{rr: b}
}

// soaPointers are the offsets in soaWire.rr of the pointers to the zone.
var soaPointers = [...]int{0, 12 + 7, 12 + 9 + 11}

func (s soaWire) put(buf []byte, zoneAt int) []byte {
	start := len(buf)
	buf = append(buf, s.rr...)
	for _, p := range soaPointers {
		binary.BigEndian.PutUint16(buf[start+p:], 0xC000|uint16(zoneAt))
	}
	return buf
}

// fast writes the answer to q into buf (empty, with room) without packing
// a message, and reports whether it could: the table must hold the answer
// packed (or it is the zone's SOA), and it must fit size.
func (h *Handler) fast(buf []byte, q *query, ans *Answer, size int) ([]byte, bool) {
	if ans.Forward || ans.Chase != "" && h.forward != nil || ans.Rcode > 0xF || q.qclass != dns.ClassINET || q.qtype == dns.TypeAXFR || q.qtype == dns.TypeIXFR {
		return nil, false
	}
	nameLen := wireNameLen(q.name)
	var an, ns, ar uint16
	var body []byte
	var soaAt int // section of the SOA: 1 answer, 2 authority
	switch {
	case ans.packed != nil:
		body, an, ns, ar = ans.packed.body, ans.packed.an, ans.packed.ns, ans.packed.ar
	case ans.soa != 0:
		soaAt = int(ans.soa)
		if soaAt == 1 {
			an = 1
		} else {
			ns = 1
		}
		body = ans.zoneSOA.wire.rr
	default:
		return nil, false
	}
	n := 12 + nameLen + 4 + len(body)
	if q.edns {
		n += 11
		ar++
	}
	if n > size || n > cap(buf) {
		return nil, false
	}

	// Header.
	var flags uint16 = bitQR
	if ans.Authoritative {
		flags |= bitAA
	}
	if q.rd {
		flags |= bitRD
	}
	if h.forward != nil {
		flags |= bitRA
	}
	if q.cd {
		flags |= bitCD
	}
	flags |= uint16(ans.Rcode)
	buf = binary.BigEndian.AppendUint16(buf, q.id)
	buf = binary.BigEndian.AppendUint16(buf, flags)
	buf = binary.BigEndian.AppendUint16(buf, 1)
	buf = binary.BigEndian.AppendUint16(buf, an)
	buf = binary.BigEndian.AppendUint16(buf, ns)
	buf = binary.BigEndian.AppendUint16(buf, ar)

	// The question, in the asker's case.
	if q.question != nil {
		buf = append(buf, q.question...)
	} else {
		buf = appendName(buf, q.name)
		buf = binary.BigEndian.AppendUint16(buf, q.qtype)
		buf = binary.BigEndian.AppendUint16(buf, q.qclass)
	}

	// Sections.
	if soaAt != 0 {
		// The zone is the question's suffix: the SOA points there.
		buf = ans.zoneSOA.wire.put(buf, 12+nameLen-wireNameLen(h.table.zone))
	} else {
		buf = append(buf, body...)
	}
	if q.edns {
		buf = append(buf, 0) // root
		buf = binary.BigEndian.AppendUint16(buf, dns.TypeOPT)
		buf = binary.BigEndian.AppendUint16(buf, advertisedUDPSize)
		var ttl uint32 // extended rcode 0, version 0
		if q.do {
			ttl |= 1 << 15
		}
		buf = binary.BigEndian.AppendUint32(buf, ttl)
		buf = binary.BigEndian.AppendUint16(buf, 0)
	}
	return buf, true
}

// appendName packs a fully qualified name without escapes.
func appendName(buf []byte, name string) []byte {
	for name != "." && name != "" {
		i := strings.IndexByte(name, '.')
		buf = append(buf, byte(i))
		buf = append(buf, name[:i]...)
		name = name[i+1:]
	}
	return append(buf, 0)
}

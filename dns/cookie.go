package dns

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"time"

	"github.com/miekg/dns"
	"k8s.io/utils/clock"
)

// DNS cookies (RFC 7873) tell a client that really sits at its address
// from a forged one: a server cookie comes back only to the address it
// was sent to. berth answers a UDP client that shows none of its cookies
// with at most cookielessUDPSize bytes (truncated, so that it asks again
// over TCP), which bounds what a forged query can reflect onto its victim.
// A client that echoes a server cookie gets the full answer its buffer
// holds.

// cookielessUDPSize caps a UDP answer to a client without a valid server
// cookie: the 1,232 bytes DNS Flag Day 2020 settled on, which also fits
// any path's MTU unfragmented.
const cookielessUDPSize = 1232

// Server cookies are made as RFC 9018 lays them out: version (1),
// reserved (3 bytes), a timestamp in seconds (4), and a hash (8) of the
// client cookie, those fields and the client's address under the server's
// secret. The hash is HMAC-SHA256's first 8 bytes (RFC 9018 names
// SipHash-2-4, for servers of one anycast address to share cookies; a
// berth server checks only its own).
const (
	cookieVersion   = 1
	clientCookieLen = 8
	serverCookieLen = 16
	maxServerCookie = 32
	cookieLifetime  = time.Hour       // a server cookie older than this is no longer valid
	cookieClockSkew = 5 * time.Minute // nor one dated further ahead
)

// cookieJar makes and checks server cookies.
type cookieJar struct {
	secret [16]byte
	clock  clock.PassiveClock
}

func newCookieJar(clk clock.PassiveClock) *cookieJar {
	j := &cookieJar{clock: clk}
	_, _ = rand.Read(j.secret[:]) // never fails (crypto/rand)
	return j
}

// cookie is what a request's COOKIE option says.
type cookie struct {
	// client is the client cookie; nil when the request has none.
	client []byte
	// valid says the request carries a server cookie this server made for
	// this client and address within cookieLifetime.
	valid bool
	// malformed says the option is there but of a length RFC 7873 does
	// not allow: the answer is FORMERR.
	malformed bool
}

// read reads the COOKIE option of a request's OPT record, if any.
func (j *cookieJar) read(opt *dns.OPT, from netip.Addr) cookie {
	if opt == nil {
		return cookie{}
	}
	for _, o := range opt.Option {
		e, ok := o.(*dns.EDNS0_COOKIE)
		if !ok {
			continue
		}
		b, err := hex.DecodeString(e.Cookie)
		if err != nil || len(b) != clientCookieLen && (len(b) < clientCookieLen+8 || len(b) > clientCookieLen+maxServerCookie) {
			return cookie{malformed: true}
		}
		c := cookie{client: b[:clientCookieLen]}
		c.valid = j.check(c.client, b[clientCookieLen:], from)
		return c
	}
	return cookie{}
}

// check reports whether server is a valid server cookie for client at from.
func (j *cookieJar) check(client, server []byte, from netip.Addr) bool {
	if len(server) != serverCookieLen || server[0] != cookieVersion {
		return false
	}
	stamp := time.Unix(int64(binary.BigEndian.Uint32(server[4:8])), 0)
	now := j.clock.Now()
	if stamp.Before(now.Add(-cookieLifetime)) || stamp.After(now.Add(cookieClockSkew)) {
		return false
	}
	return hmac.Equal(server[8:], j.hash(client, server[:8], from))
}

// option is the COOKIE option of an answer: the client's cookie and a
// fresh server cookie for it.
func (j *cookieJar) option(client []byte, from netip.Addr) *dns.EDNS0_COOKIE {
	b := make([]byte, 0, clientCookieLen+serverCookieLen)
	b = append(b, client...)
	b = append(b, cookieVersion, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(j.clock.Now().Unix()))
	b = append(b, j.hash(client, b[clientCookieLen:], from)...)
	return &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hex.EncodeToString(b)}
}

func (j *cookieJar) hash(client, head []byte, from netip.Addr) []byte {
	m := hmac.New(sha256.New, j.secret[:])
	m.Write(client)
	m.Write(head)
	a := from.Unmap().As16()
	m.Write(a[:])
	return m.Sum(nil)[:8]
}

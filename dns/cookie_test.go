package dns

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/store"
)

const testClientCookie = "0102030405060708"

// askWithCookie asks as ask does, with a COOKIE option holding cookie (a
// client cookie, and maybe a server cookie after it), in hex.
func askWithCookie(t testing.TB, network, addr, name string, qtype uint16, size uint16, cookie string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(size, false)
	o := m.IsEdns0()
	o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: cookie})
	resp, _, err := (&dns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return resp
}

// packedLen is the size of a message on the wire, compressed.
func packedLen(m *dns.Msg) int {
	m.Compress = true
	b, _ := m.Pack()
	return len(b)
}

// cookieOf is the COOKIE option of an answer, in hex, or "".
func cookieOf(m *dns.Msg) string {
	if o := m.IsEdns0(); o != nil {
		for _, e := range o.Option {
			if c, ok := e.(*dns.EDNS0_COOKIE); ok {
				return c.Cookie
			}
		}
	}
	return ""
}

// serverCookie asks the server once with testClientCookie alone and
// returns the cookie of its answer: the client cookie and a server cookie.
func serverCookie(t testing.TB, addr string) string {
	t.Helper()
	m := askWithCookie(t, "udp", addr, "kubernetes.default.svc.cluster.local.", dns.TypeA, 1232, testClientCookie)
	c := cookieOf(m)
	if len(c) != 2*(clientCookieLen+serverCookieLen) || c[:16] != testClientCookie {
		t.Fatalf("answer's cookie %q, want the client's and a server cookie of 16 bytes", c)
	}
	return c
}

// TestServerCookies: a client cookie alone gets a server cookie back,
// over UDP and TCP; the server cookie is valid for an hour from the
// address it was made for and no other, and a wrong, expired or malformed
// one does not lift the cap on UDP answers; a malformed option is FORMERR.
func TestServerCookies(t *testing.T) {
	st := newStore(t, store.Options{})
	put(t, st, svc("default", "big"), manyEndpoints("default", "big", 200, 1))
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	srv := startServer(t, st, Options{Clock: clk}, nil)
	const name = "big.default.svc.cluster.local."

	full := serverCookie(t, srv.Addr())
	if m := askWithCookie(t, "tcp", srv.Addr(), name, dns.TypeA, 1232, testClientCookie); cookieOf(m)[:16] != testClientCookie || len(m.Answer) != 200 {
		t.Errorf("over TCP: cookie %q, %d answers", cookieOf(m), len(m.Answer))
	}
	if m := askWithCookie(t, "udp", srv.Addr(), name, dns.TypeA, 4096, full); m.Truncated || len(cookieOf(m)) != len(full) {
		t.Errorf("with the server cookie: TC=%v, cookie %q", m.Truncated, cookieOf(m))
	}
	b, _ := hex.DecodeString(full)
	b[len(b)-1] ^= 1
	for what, c := range map[string]string{
		"a forged server cookie":     hex.EncodeToString(b),
		"another client's cookie":    "ffffffffffffffff" + full[16:],
		"a cookie of another server": testClientCookie + "01000000" + "00000000" + "0000000000000000",
	} {
		if m := askWithCookie(t, "udp", srv.Addr(), name, dns.TypeA, 4096, c); !m.Truncated || packedLen(m) > cookielessUDPSize {
			t.Errorf("%s: TC=%v, %d bytes; want the cookieless cap", what, m.Truncated, packedLen(m))
		}
	}
	for what, c := range map[string]string{
		"too short":        "01020304",
		"server too short": testClientCookie + "0102",
		"too long":         testClientCookie + hex.EncodeToString(make([]byte, 33)),
	} {
		if m := askWithCookie(t, "udp", srv.Addr(), name, dns.TypeA, 4096, c); m.Rcode != dns.RcodeFormatError {
			t.Errorf("cookie %s: rcode %s, want FORMERR", what, dns.RcodeToString[m.Rcode])
		}
	}
	clk.Step(cookieLifetime + time.Second)
	if m := askWithCookie(t, "udp", srv.Addr(), name, dns.TypeA, 4096, full); !m.Truncated {
		t.Error("a server cookie older than its lifetime lifted the cap")
	}
}

// TestCookieIsBoundToTheAddress: a server cookie made for one address is
// no good from another.
func TestCookieIsBoundToTheAddress(t *testing.T) {
	j := newCookieJar(clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0)))
	client, _ := hex.DecodeString(testClientCookie)
	a, b := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: []dns.EDNS0{j.option(client, a)}}
	if c := j.read(o, a); !c.valid {
		t.Error("the cookie is not valid from its own address")
	}
	if c := j.read(o, b); c.valid || c.malformed || c.client == nil {
		t.Errorf("from another address: %+v, want a client cookie without a valid server cookie", c)
	}
}

// FuzzCookie: any COOKIE option is read without a panic; only the right
// lengths are taken, and only a cookie this jar made is valid.
func FuzzCookie(f *testing.F) {
	j := newCookieJar(clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0)))
	from := netip.MustParseAddr("198.18.0.1")
	client, _ := hex.DecodeString(testClientCookie)
	good, _ := hex.DecodeString(j.option(client, from).Cookie)
	for _, s := range [][]byte{client, good, good[:20], append(good, 0), make([]byte, 41), nil} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT},
			Option: []dns.EDNS0{&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hex.EncodeToString(b)}}}
		c := j.read(o, from)
		okLen := len(b) == 8 || len(b) >= 16 && len(b) <= 40
		if c.malformed == okLen {
			t.Errorf("%d bytes: malformed %v", len(b), c.malformed)
		}
		if c.valid && !bytes.Equal(b, good) {
			t.Errorf("%x is valid, and not the jar's", b)
		}
	})
}

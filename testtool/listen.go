package testtool

import (
	"net"
	"testing"
)

// LoopbackPair is a UDP socket and a TCP listener on one port of
// 127.0.0.1, as a DNS server serves. The kernel picks the UDP port; the
// same TCP port may be taken meanwhile by another process's connection,
// so a few ports are tried before the test fails. Both close when the
// test ends.
func LoopbackPair(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	const attempts = 20
	for attempt := 1; ; attempt++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			t.Cleanup(func() { pc.Close(); l.Close() })
			return pc, l
		}
		pc.Close()
		if attempt == attempts {
			t.Fatalf("no loopback port free over both UDP and TCP after %d tries: %v", attempts, err)
		}
	}
}

// ClosedAddr is a loopback address (host:port) nothing listens on now:
// a server that is down, whose dial is refused at once.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// ClosedURL is an https URL of ClosedAddr: a server that is down.
func ClosedURL(t testing.TB) string {
	t.Helper()
	return "https://" + ClosedAddr(t)
}

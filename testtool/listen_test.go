package testtool_test

import (
	"net"
	"testing"

	"github.com/berth-dev/berth/testtool"
)

// TestLoopbackPairSharesAPort: the UDP socket and the TCP listener are on
// one port, and another pair gets another.
func TestLoopbackPairSharesAPort(t *testing.T) {
	pc, l := testtool.LoopbackPair(t)
	if u, c := pc.LocalAddr().(*net.UDPAddr), l.Addr().(*net.TCPAddr); u.Port != c.Port || !u.IP.IsLoopback() {
		t.Fatalf("UDP %v, TCP %v: want one loopback port", u, c)
	}
	pc2, _ := testtool.LoopbackPair(t)
	if pc2.LocalAddr().String() == pc.LocalAddr().String() {
		t.Fatalf("two pairs on %v", pc.LocalAddr())
	}
}

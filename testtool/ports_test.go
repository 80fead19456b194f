package testtool

import (
	"net"
	"strconv"
	"testing"
)

// FreePort picks below the kernel's ephemeral range, where no :0 listener
// or connection's source port lands, a port that can be bound.
func TestFreePort(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		p := FreePort(t, "127.0.0.1")
		if p >= low || p < 1024 {
			t.Fatalf("port %d, want one below the ephemeral range's %d", p, low)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
	}
}

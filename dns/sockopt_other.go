//go:build !linux

package dns

import (
	"net"
	"syscall"
)

// reusePort: elsewhere one socket serves UDP.
const reusePort = false

func reusePortControl(_, _ string, _ syscall.RawConn) error { return nil }

func setReadBuffer(conn *net.UDPConn, n int) (int, error) {
	return n, conn.SetReadBuffer(n)
}

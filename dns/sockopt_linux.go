package dns

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// reusePort lets several UDP sockets share the DNS port, each read by its
// own goroutine; the kernel spreads datagrams over them by source address.
const reusePort = true

func reusePortControl(_, _ string, c syscall.RawConn) error {
	var opErr error
	if err := c.Control(func(fd uintptr) {
		opErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return opErr
}

// setReadBuffer asks for a receive buffer of n bytes, beyond
// net.core.rmem_max where the process may (SO_RCVBUFFORCE needs
// CAP_NET_ADMIN), and returns the size the kernel granted.
func setReadBuffer(conn *net.UDPConn, n int) (int, error) {
	if err := conn.SetReadBuffer(n); err != nil {
		return 0, err
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var got int
	var opErr error
	if err := raw.Control(func(fd uintptr) {
		// The kernel doubles the value it is given, for its bookkeeping.
		if got, opErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF); opErr == nil && got/2 < n {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n) == nil {
				got, opErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
			}
		}
	}); err != nil {
		return 0, err
	}
	return got / 2, opErr
}

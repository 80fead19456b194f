package podnet

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// freebind lets a socket bind an address no interface holds yet.
func freebind(network, _ string, c syscall.RawConn) error {
	var opErr error
	err := c.Control(func(fd uintptr) {
		level, opt := unix.SOL_IP, unix.IP_FREEBIND
		if network == "udp6" || network == "tcp6" {
			level, opt = unix.SOL_IPV6, unix.IPV6_FREEBIND
		}
		opErr = unix.SetsockoptInt(int(fd), level, opt, 1)
	})
	return errors.Join(err, opErr)
}

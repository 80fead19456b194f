//go:build linux || darwin

package ingress

import "syscall"

// alive tells whether an idle connection is still open: nothing to
// read, where the peer's close would have left an EOF, and no error.
// Bytes an idle connection should not have count as dead too.
func alive(raw syscall.RawConn) bool {
	if raw == nil {
		return true
	}
	ok := false
	var b [1]byte
	err := raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && ok
}

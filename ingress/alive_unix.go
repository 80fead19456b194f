//go:build linux || darwin

package ingress

import "syscall"

// peek looks at what a connection has to read without taking it: n is
// 0 at its end; EAGAIN when nothing is there yet.
func peek(fd uintptr) (n int, err error) {
	var b [1]byte
	for {
		n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

func nothingYet(err error) bool { return err == syscall.EAGAIN || err == syscall.EWOULDBLOCK }

// alive tells whether an idle connection is still open: nothing to
// read, where the peer's close would have left an EOF, and no error.
// Bytes an idle connection should not have count as dead too.
func alive(raw syscall.RawConn) bool {
	if raw == nil {
		return true
	}
	ok := false
	err := raw.Read(func(fd uintptr) bool {
		_, err := peek(fd)
		ok = nothingYet(err)
		return true
	})
	return err == nil && ok
}

// waitClosed waits until the peer closes conn, sends more, or the read
// deadline passes; it says whether the peer closed it.
func waitClosed(raw syscall.RawConn) bool {
	if raw == nil {
		return false
	}
	closed := false
	err := raw.Read(func(fd uintptr) bool {
		n, err := peek(fd)
		if nothingYet(err) {
			return false // wait until readable
		}
		closed = n == 0 || err != nil
		return true
	})
	return err == nil && closed
}

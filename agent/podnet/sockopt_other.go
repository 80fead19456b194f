//go:build !linux

package podnet

import "syscall"

// freebind does nothing where IP_FREEBIND does not exist: the forwarder
// starts once the address is up.
func freebind(string, string, syscall.RawConn) error { return nil }

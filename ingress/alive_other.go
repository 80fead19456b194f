//go:build !linux && !darwin

package ingress

import "syscall"

// alive cannot look at an idle connection here: a closed one is found
// when the request sent on it fails.
func alive(syscall.RawConn) bool { return true }

// waitClosed cannot watch a connection here: a client that went away
// is found when its answer is written.
func waitClosed(syscall.RawConn) bool { return false }

package podnet

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// inNetNS runs fn on a thread in network namespace ns, for what binds to
// a namespace as it is made: sockets, and the /proc/sys/net files opened.
// A nil ns is the calling thread's own.
func inNetNS(ns *netns.NsHandle, fn func() error) error {
	if ns == nil {
		return fn()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(*ns); err != nil {
		return fmt.Errorf("enter network namespace: %w", err)
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		// The thread is in the wrong namespace: leave it locked, so the
		// runtime ends it with the goroutine rather than reuse it.
		runtime.LockOSThread()
		return errors.Join(ferr, fmt.Errorf("leave network namespace: %w", err))
	}
	return ferr
}

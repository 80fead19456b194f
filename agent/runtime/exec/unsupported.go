//go:build !linux

package exec

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/berth-dev/berth/agent/runtime"
)

// errUnsupported is what the exec runtime answers where it cannot run:
// process groups, pidfds, cgroups and subreapers are Linux's.
var errUnsupported = errors.New("the exec runtime runs on Linux only")

// Runtime is the exec runtime; on this system it refuses to start.
type Runtime struct{}

// New fails here: the agent runs on Linux; the rest of berth (server,
// client commands) runs everywhere.
func New(Options) (*Runtime, error) { return nil, errUnsupported }

// ShimMain returns at once: there are no shims here.
func ShimMain() {}

// Close does nothing.
func (*Runtime) Close() error { return nil }

// Capabilities reports nothing enforced.
func (*Runtime) Capabilities() runtime.Capabilities { return runtime.Capabilities{} }

// Exited never delivers.
func (*Runtime) Exited() <-chan runtime.ID { return nil }

// Start refuses.
func (*Runtime) Start(context.Context, *runtime.Container) (runtime.Status, error) {
	return runtime.Status{}, errUnsupported
}

// Stop refuses.
func (*Runtime) Stop(context.Context, runtime.ID, time.Duration) error { return errUnsupported }

// Status refuses.
func (*Runtime) Status(context.Context, runtime.ID) (runtime.Status, error) {
	return runtime.Status{}, errUnsupported
}

// List refuses.
func (*Runtime) List(context.Context) ([]runtime.Status, error) { return nil, errUnsupported }

// Remove refuses.
func (*Runtime) Remove(context.Context, runtime.ID) error { return errUnsupported }

// Exec refuses.
func (*Runtime) Exec(context.Context, runtime.ID, []string) ([]byte, int, error) {
	return nil, 0, errUnsupported
}

// Logs refuses.
func (*Runtime) Logs(context.Context, runtime.ID, runtime.LogOptions, io.Writer) error {
	return errUnsupported
}

// Stats refuses.
func (*Runtime) Stats(context.Context, runtime.ID) (runtime.Stats, error) {
	return runtime.Stats{}, errUnsupported
}

// DiskUsage refuses.
func (*Runtime) DiskUsage(context.Context, runtime.ID) (int64, error) { return 0, errUnsupported }

// ExecStream refuses.
func (*Runtime) ExecStream(context.Context, runtime.ID, runtime.ExecOptions) (int, error) {
	return 0, errUnsupported
}

// Attach refuses.
func (*Runtime) Attach(context.Context, runtime.ID, runtime.AttachOptions) error {
	return errUnsupported
}

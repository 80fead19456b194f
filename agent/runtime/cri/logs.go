package cri

import (
	"context"
	"fmt"
	"io"
	"os"

	crilogs "k8s.io/cri-client/pkg/logs"

	"github.com/berth-dev/berth/agent/runtime"
)

// Logs implements runtime.Runtime from the run's CRI log file, read as the
// kubelet reads it (timestamps, since, tail, follow until the run exits).
func (r *Runtime) Logs(ctx context.Context, id runtime.ID, opts runtime.LogOptions, w io.Writer) error {
	rn, err := r.lookup(ctx, id)
	if err != nil {
		return err
	}
	if rn.logPath == "" {
		return fmt.Errorf("%s: the runtime keeps no log of it", id)
	}
	if _, err := os.Stat(rn.logPath); os.IsNotExist(err) {
		return nil // nothing written yet
	}
	lo := &crilogs.LogOptions{Since: opts.Since, Follow: opts.Follow && rn.status.State == runtime.StateRunning, Timestamp: opts.Timestamps}
	if opts.TailLines > 0 {
		n := opts.TailLines
		lo.TailLines = &n
	}
	return crilogs.ReadLogs(ctx, rn.logPath, rn.criID, lo, r.rs, w, w)
}

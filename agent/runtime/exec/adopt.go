//go:build linux

package exec

import (
	"fmt"
	"path/filepath"

	"github.com/berth-dev/berth/agent/runtime"
)

// adoptAll reads every run under the root.
func (r *Runtime) adoptAll() error {
	dirs, err := filepath.Glob(filepath.Join(r.root, "*", "containers", "*", "*", configFile))
	if err != nil {
		return fmt.Errorf("exec runtime: %w", err)
	}
	for _, cf := range dirs {
		dir := filepath.Dir(cf)
		var cfg runConfig
		if err := readJSON(cf, &cfg); err != nil {
			r.log.Warn("skipping unreadable run", "dir", dir, "err", err)
			continue
		}
		id := cfg.Container.ID
		if runDir(r.root, id) != dir {
			r.log.Warn("skipping run whose config names another id", "dir", dir, "id", id.String())
			continue
		}
		rn := &run{id: id, dir: dir, cfg: cfg, done: make(chan struct{})}
		rn.state, rn.status = readRun(id, dir)
		r.runs[id] = rn
		switch {
		case rn.status.State == runtime.StateExited:
			close(rn.done)
		case rn.status.State == runtime.StateRunning && alive(rn.state.ShimPID, rn.state.ShimStart):
			r.watch(rn, rn.state.ShimPID, rn.state.ShimStart, -1)
		case rn.status.State == runtime.StateRunning && alive(rn.state.PID, rn.state.PIDStart):
			// The shim is gone but the container lives: it can still be
			// stopped, but its exit code will not be known.
			r.watch(rn, rn.state.PID, rn.state.PIDStart, -1)
		default:
			// Recheck: the shim may have written its exit just now.
			rn.state, rn.status = readRun(id, dir)
			if rn.status.State != runtime.StateExited {
				rn.status = lost(rn.status, r.clk.Now())
			}
			close(rn.done)
		}
	}
	return nil
}

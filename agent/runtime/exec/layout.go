//go:build linux

package exec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/berth-dev/berth/agent/runtime"
)

// File names inside a run directory.
const (
	configFile = "config.json"
	stateFile  = "state.json"
	exitFile   = "exit.json"
	logFile    = "output.log"
	shimLog    = "shim.log"
)

// Reasons a run reports, as the kubelet reports them.
const (
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
	// ReasonStartError: the process could not be started at all.
	ReasonStartError = "StartError"
	// ReasonUnknown: the run's processes are gone and left no exit record.
	ReasonUnknown = "ContainerStatusUnknown"
)

// startErrorCode is the exit code of a run that never started, as Docker
// reports a container that cannot run.
const startErrorCode = 128

// unknownExitCode is what the kubelet reports for a container it lost.
const unknownExitCode = 137

// runConfig is config.json: the container and the cgroup made for it.
type runConfig struct {
	Container runtime.Container `json:"container"`
	Cgroup    cgroupPaths       `json:"cgroup"`
	// LogMaxBytes is the size at which the shim rotates the log.
	LogMaxBytes int64 `json:"logMaxBytes"`
}

// runState is state.json.
type runState struct {
	ShimPID   int       `json:"shimPID"`
	ShimStart uint64    `json:"shimStart"`
	PID       int       `json:"pid"`
	PIDStart  uint64    `json:"pidStart"`
	StartedAt time.Time `json:"startedAt"`
	Warnings  []string  `json:"warnings,omitempty"`
}

// runExit is exit.json.
type runExit struct {
	ExitCode   int       `json:"exitCode"`
	Signal     int       `json:"signal,omitempty"`
	FinishedAt time.Time `json:"finishedAt"`
	Reason     string    `json:"reason"`
	Message    string    `json:"message,omitempty"`
}

// runDir is where the run id keeps its files.
func runDir(root string, id runtime.ID) string {
	return filepath.Join(root, id.PodUID, "containers", id.Name, strconv.Itoa(id.Attempt))
}

// writeJSON writes v to path atomically: a reader sees the old file, no
// file, or the whole new one.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readJSON reads path into v; the error wraps fs.ErrNotExist when the file
// is missing.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// exitReason names how a process ended.
func exitReason(code int, oom bool) string {
	switch {
	case oom:
		return ReasonOOMKilled
	case code == 0:
		return ReasonCompleted
	default:
		return ReasonError
	}
}

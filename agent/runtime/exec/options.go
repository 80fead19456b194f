package exec

import (
	"log/slog"

	"k8s.io/utils/clock"
)

// Options configure a Runtime.
type Options struct {
	// Root is the runtime's state directory (the agent's <data dir>/pods).
	Root string
	// Logger receives what the runtime cannot return (a run lost while
	// watching it). Nil discards.
	Logger *slog.Logger
	// Clock times Stop's grace period, the following of logs and the slow
	// poll of processes pidfd cannot watch. Nil is the real clock.
	Clock clock.WithTicker
}

// ShimEnv is the variable that turns the berth binary into a shim: its
// value is the run directory.
const ShimEnv = "BERTH_EXEC_SHIM"

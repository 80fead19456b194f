// Package cptest runs a real control plane inside a test, for the tests of
// the packages that talk to one (the agent, the CLI).
package cptest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"syscall"
	"testing"

	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/testtool"
)

// Start runs a control plane until the test ends: cfg, with a temporary
// data dir, a free loopback port (picked before the server starts, so
// that admin.kubeconfig names it), the memory store and no logs where cfg
// leaves them empty. The server is stopped, and waited for, at cleanup.
func Start(t testing.TB, cfg controlplane.Config) *controlplane.Server {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Store == "" {
		cfg.Store = controlplane.StoreMemory
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pick := cfg.Listen == ""
	for try := 1; ; try++ {
		if pick {
			cfg.Listen = freeAddr(t)
		}
		s, err := controlplane.New(context.Background(), cfg)
		// Another test may take the port between its pick and the
		// server's bind (as the source port of a connection): pick again.
		if pick && try < 5 && errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		testtool.Run(t, "control plane", s.Run)
		return s
	}
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(testtool.FreePort(t, "127.0.0.1")))
}

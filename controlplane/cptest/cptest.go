// Package cptest runs a real control plane inside a test, for the tests of
// the packages that talk to one (the agent, the CLI).
package cptest

import (
	"context"
	"log/slog"
	"net"
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
	if cfg.Listen == "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listen = l.Addr().String()
		l.Close()
	}
	if cfg.Store == "" {
		cfg.Store = controlplane.StoreMemory
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := controlplane.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	testtool.Run(t, "control plane", s.Run)
	return s
}

//go:build !linux

package podnet

import (
	"context"
	"errors"
	"runtime"

	"github.com/berth-dev/berth/api"
)

// Manager joins a node to the pod network; it needs Linux's routing.
type Manager struct{}

// NewManager refuses: pod networking needs Linux.
func NewManager(Options) (*Manager, error) {
	return nil, errors.New("pod network: host-gw routing needs Linux, not " + runtime.GOOS)
}

// Run does nothing.
func (m *Manager) Run(context.Context) error { return nil }

// Sync does nothing.
func (m *Manager) Sync([]*api.Node) error { return nil }

// Cleanup does nothing.
func (m *Manager) Cleanup() error { return nil }

// Routes is none.
func (m *Manager) Routes() []Route { return nil }

//go:build !linux

package proxy

import "errors"

// Table is the proxy's nftables tables' name; nftables is Linux's alone.
const Table = "berth-proxy"

// Syncer cannot write rules here.
type Syncer struct{}

// NewSyncer makes a Syncer that refuses.
func NewSyncer(int) *Syncer { return &Syncer{} }

var errUnsupported = errors.New("the service proxy needs Linux nftables")

// Sync refuses.
func (s *Syncer) Sync(...*Ruleset) (bool, error) { return false, errUnsupported }

// Cleanup has nothing to remove.
func (s *Syncer) Cleanup() error { return nil }

package store

import (
	"sync/atomic"

	"github.com/berth-dev/berth/api"
)

// kindRevisions remember, per kind, the revision of the newest write to
// it, so that a cache of one kind (the RBAC authorizer's index) knows it
// is current with one atomic load instead of watching.
type kindRevisions map[*api.Kind]*atomic.Uint64

func newKindRevisions() kindRevisions {
	m := kindRevisions{}
	for _, k := range api.Kinds() {
		m[k] = &atomic.Uint64{}
	}
	return m
}

// touch records the kinds ops write at rev. The caller holds writeMu.
func (s *Store) touch(ops []Op, rev uint64) {
	for _, op := range ops {
		if r := s.kindRevs[op.Kind]; r != nil {
			r.Store(rev)
		}
	}
}

// KindRevision is the revision of the newest write to an object of kind
// k that this store made or replayed (0 before any since it opened): a
// cache of the kind built from a snapshot at or after that revision is
// current.
func (s *Store) KindRevision(k *api.Kind) uint64 {
	if r := s.kindRevs[k]; r != nil {
		return r.Load()
	}
	return 0
}

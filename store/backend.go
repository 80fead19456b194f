package store

import (
	"context"
	"errors"

	"github.com/berth-dev/berth/api"
)

// Backend makes the store durable. The store calls Load once when it opens
// and then Commit for every group of transactions, in revision order, from
// one goroutine. Commit returns only when the writes are durable: the store
// acknowledges a transaction, and lets readers and watchers see it, only
// after that.
type Backend interface {
	// Load calls fn for every stored object and returns the revision of the
	// last committed transaction (0 for an empty backend).
	Load(fn func(obj api.Object) error) (revision uint64, err error)
	// Commit writes the operations of one or more transactions atomically
	// and records revision as the newest. It must be all or nothing.
	Commit(revision uint64, ops []Op) error
	// Close releases the backend.
	Close() error
}

// Op is one write of a committed transaction as a backend sees it.
type Op struct {
	Kind      *api.Kind
	Namespace string
	Name      string
	// Revision is the revision of the transaction that made the write:
	// one commit of a group carries several.
	Revision uint64
	// Object is nil for a delete.
	Object api.Object
	// Data is Object encoded as JSON, filled in for persistent backends.
	Data []byte
}

// Replicated is a Backend that several stores share, each in its own
// control plane: one of them, the leader, writes, and the others follow
// what it commits, serving reads and watches from their own tables, until
// one of them takes over. A store over a Replicated backend starts as a
// follower (see Store.Lead).
type Replicated interface {
	Backend
	// Follow calls apply with every commit after the last one Load read
	// or Follow applied, in revision order, until ctx ends (nil) or the
	// backend can no longer say what came next (ErrResync: Load again).
	// apply gets the commit's newest revision and its writes, each with
	// its own revision and its Object decoded.
	Follow(ctx context.Context, apply func(rev uint64, ops []Op) error) error
	// Campaign blocks until this store is elected leader, announcing
	// value (where its API serves) to the others, and returns the
	// revision of the last commit the backend holds: once elected, no
	// other store can commit, so it is the revision to lead from.
	Campaign(ctx context.Context, value string) (uint64, error)
	// Lost is closed once leadership won by Campaign is lost; commits
	// after that fail.
	Lost() <-chan struct{}
}

// ReadIndexer is a Replicated backend that can say how far the cluster's
// commits have gone, asked of the backend's quorum, so that a read
// through any control plane sees every write acknowledged before it
// began (see Store.Sync).
type ReadIndexer interface {
	// ReadIndex returns the revision of the newest commit the backend
	// holds. With leading (the store takes writes), it confirms instead
	// that this store still leads, so that its own tables hold every
	// commit, and returns 0, or ErrNotLeader once another leads.
	ReadIndex(ctx context.Context, leading bool) (uint64, error)
}

// ErrResync is what Replicated.Follow returns when it lost track of the
// commits (their history was compacted): the follower must Load again.
var ErrResync = errors.New("the backend's history moved past this follower; load again")

// Limited is implemented by backends that hold objects up to a size: a
// write of a larger one fails with ErrInvalid, and nothing commits.
type Limited interface {
	// MaxObjectBytes is the largest object, encoded, the backend holds.
	MaxObjectBytes() int
}

// Identified is implemented by backends that keep an identity of their
// store in it (bolt writes one into its file when it makes it): a copy
// restored keeps it, an empty store made in its place has another.
type Identified interface {
	UID() string
}

// Persistent is implemented by backends that need Op.Data.
type Persistent interface {
	Persistent() bool
}

// Memory is a Backend that keeps nothing: a restart starts empty. It serves
// tests, `berth sim` and `--store memory`.
type Memory struct{}

// Load returns nothing.
func (Memory) Load(func(api.Object) error) (uint64, error) { return 0, nil }

// Commit does nothing.
func (Memory) Commit(uint64, []Op) error { return nil }

// Close does nothing.
func (Memory) Close() error { return nil }

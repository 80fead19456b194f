package store

import (
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
	// Object is nil for a delete.
	Object api.Object
	// Data is Object encoded as JSON, filled in for persistent backends.
	Data []byte
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

package storetest

import (
	"testing"

	"github.com/berth-dev/berth/store"
)

// NewMemory is an empty store on the memory backend, closed when the
// test ends.
func NewMemory(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

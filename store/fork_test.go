package store

import (
	"context"
	"testing"
)

func TestForkIsolated(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, pod("default", "a", "")); err != nil {
		t.Fatal(err)
	}
	rev := s.Revision()
	f := s.Fork(Options{})
	defer f.Close()
	if f.Revision() != rev {
		t.Fatalf("fork at revision %d, store at %d", f.Revision(), rev)
	}
	if _, err := f.Get(podKind, "default", "a"); err != nil {
		t.Fatalf("fork does not hold the store's pod: %v", err)
	}
	if _, err := f.Create(ctx, pod("default", "b", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Delete(ctx, podKind, "default", "a", DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(podKind, "default", "b"); !IsNotFound(err) {
		t.Fatalf("the store sees the fork's create: %v", err)
	}
	if _, err := s.Get(podKind, "default", "a"); err != nil {
		t.Fatalf("the fork's delete reached the store: %v", err)
	}
	if s.Revision() != rev {
		t.Fatalf("store moved from %d to %d", rev, s.Revision())
	}
	if _, err := s.Create(ctx, pod("default", "c", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(podKind, "default", "c"); !IsNotFound(err) {
		t.Fatalf("the fork sees a later write of the store: %v", err)
	}
}

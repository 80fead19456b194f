package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/berth-dev/berth/api"
)

// TestRepairDropsWhatCannotBeRead breaks one object's JSON: the store
// refuses to load, naming it; Repair writes a store of every other
// object, keeping the identity, naming what it dropped and keeping the
// old file; the repaired store loads, at a higher revision.
func TestRepairDropsWhatCannotBeRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	for _, name := range []string{"a", "b", "c"} {
		if _, err := s.Create(context.Background(), configMap(name, map[string]string{"k": name})); err != nil {
			t.Fatal(err)
		}
	}
	rev := s.Revision()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	uid := b.UID()
	b.Close()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("configmaps")).Put([]byte("default/b"), []byte(`{"metadata":{"name":`))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	b, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Load(func(api.Object) error { return nil })
	b.Close()
	var dmg *DamagedObjectError
	if !errors.As(err, &dmg) || dmg.Resource != "configmaps" || dmg.Key != "default/b" {
		t.Fatalf("load of a store with a broken object: %v", err)
	}
	if _, err := Verify(path); err == nil || !strings.Contains(err.Error(), "default/b") {
		t.Fatalf("verify: %v", err)
	}

	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	res, err := Repair(path, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dropped) != 1 || res.Dropped[0].Resource != "configmaps" || res.Dropped[0].Key != "default/b" || res.Dropped[0].Reason == "" {
		t.Fatalf("dropped %+v", res.Dropped)
	}
	if res.Kept != path+".before-repair-20260304T050607Z" || res.UID != uid || res.Revision != rev+1 {
		t.Fatalf("repair %+v, want the old file kept, UID %s, revision %d", res, uid, rev+1)
	}
	if _, err := os.Stat(res.Kept); err != nil {
		t.Fatal(err)
	}
	names, gotRev := loadNames(t, path)
	if !names["a"] || names["b"] || !names["c"] || gotRev != rev+1 {
		t.Fatalf("repaired store holds %v at %d", names, gotRev)
	}
	b, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.UID() != uid {
		t.Errorf("repaired store's UID %q, was %q", b.UID(), uid)
	}
	b.Close()
	// A whole store needs no repair, and is left as it is.
	res, err = Repair(path, now.Add(time.Hour))
	if err != nil || len(res.Dropped) != 0 || res.Kept != "" {
		t.Fatalf("repair of a whole store: %+v, %v", res, err)
	}
}

// Repair never panics, whatever the file holds; its errors name the file,
// and what it writes verifies.
func FuzzRepair(f *testing.F) {
	good := snapshotBytes(f, "a", "b")
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0}, 8192))
	if i := bytes.Index(good, []byte(`"name":"a"`)); i >= 0 {
		broken := bytes.Clone(good)
		copy(broken[i:], `"name":{}a`)
		f.Add(broken)
	}
	dir := f.TempDir()
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, fmt.Sprintf("f%d.db", n.Add(1)))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		res, err := Repair(path, time.Now())
		if res.Kept != "" {
			defer os.Remove(res.Kept)
		}
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if res.Kept != "" {
			if _, err := Verify(path); err != nil {
				t.Fatalf("repaired, then verify: %v", err)
			}
		}
	})
}

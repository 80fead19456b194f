package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// openBackend opens a store over a bolt file, closed when the test ends,
// and returns it and its backend.
func openBackend(t testing.TB, path string) (*store.Store, *Backend) {
	t.Helper()
	b, s := openBoth(t, path)
	t.Cleanup(func() { s.Close() })
	return s, b
}

// loadNames reads the configmaps of a store file with the store's loader.
func loadNames(t testing.TB, path string) (map[string]bool, uint64) {
	t.Helper()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	names := map[string]bool{}
	rev, err := b.Load(func(o api.Object) error {
		if api.KindOf(o) == cmKind {
			names[o.GetName()] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, rev
}

// A snapshot taken while writers go on holds every write acknowledged
// before it began, opens with the store's loader, and is what Verify
// and the reported size and revision say.
func TestSnapshotWhileWriting(t *testing.T) {
	dir := t.TempDir()
	s, b := openBackend(t, filepath.Join(dir, "state.db"))
	ctx := context.Background()
	for i := range 50 {
		if _, err := s.Create(ctx, configMap(fmt.Sprintf("before-%d", i), map[string]string{"x": strings.Repeat("x", 500)})); err != nil {
			t.Fatal(err)
		}
	}
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Create(ctx, configMap(fmt.Sprintf("during-%d", i), nil)); err != nil {
				t.Error(err)
				return
			}
			acked.Store(int64(i + 1))
		}
	})
	// Some writes land before the snapshot.
	for acked.Load() < 5 {
		runtime.Gosched()
	}
	ackedBefore := int(acked.Load())
	var buf bytes.Buffer
	info, err := b.WriteSnapshot(&buf, func(SnapshotInfo) error { return nil })
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != info.Size {
		t.Fatalf("wrote %d bytes, said %d", buf.Len(), info.Size)
	}
	path := filepath.Join(dir, "snap.db")
	got, err := WriteSnapshotFile(&buf, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != info.Revision || got.Size != info.Size {
		t.Fatalf("verified %+v, sent %+v", got, info)
	}
	names, rev := loadNames(t, path)
	if rev != info.Revision {
		t.Fatalf("loaded revision %d, snapshot said %d", rev, info.Revision)
	}
	for i := range 50 {
		if !names[fmt.Sprintf("before-%d", i)] {
			t.Fatalf("before-%d missing", i)
		}
	}
	for i := range ackedBefore {
		if !names[fmt.Sprintf("during-%d", i)] {
			t.Fatalf("during-%d, acknowledged before the snapshot, missing", i)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left: %v", err)
	}
}

// snapshotBytes is a snapshot of a small store.
func snapshotBytes(t testing.TB, names ...string) []byte {
	t.Helper()
	s, b := openBackend(t, filepath.Join(t.TempDir(), "state.db"))
	for _, n := range names {
		if _, err := s.Create(context.Background(), configMap(n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := b.WriteSnapshot(&buf, func(SnapshotInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A short, foreign or broken file is an error that says what is wrong,
// and leaves no file behind.
func TestWriteSnapshotFileRefuses(t *testing.T) {
	good := snapshotBytes(t, "a")
	foreign := filepath.Join(t.TempDir(), "other.db")
	db, err := bbolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("x")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	foreignBytes, err := os.ReadFile(foreign)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"empty":     {nil, "empty file"},
		"truncated": {good[:len(good)-4096], "truncated"},
		"random":    {bytes.Repeat([]byte("berth"), 4000), "invalid"},
		"foreign":   {foreignBytes, "not a berth store"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snap.db")
			_, err := WriteSnapshotFile(bytes.NewReader(c.data), path, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v, want an error naming %s and saying %q", err, path, c.want)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 0 {
				t.Fatalf("left %v", entries)
			}
		})
	}
}

// Restore keeps the replaced file, puts the snapshot in place, raises
// the revision past the replaced store's, and refuses while the store is
// held.
func TestRestore(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "snap.db")
	if err := os.WriteFile(snap, snapshotBytes(t, "old-1", "old-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, snapRev := loadNames(t, snap)
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s, _ := openBackend(t, path)
	for i := range 10 {
		if _, err := s.Create(context.Background(), configMap(fmt.Sprintf("new-%d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	if _, err := Restore(snap, path, now); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("restore while held: %v", err)
	}
	oldRev := s.Revision()
	s.Close()
	res, err := Restore(snap, path, now)
	if err != nil {
		t.Fatal(err)
	}
	kept := path + ".before-restore-20260304T050607Z"
	if res.Kept != kept || !res.Bumped || res.Revision != oldRev+1 {
		t.Fatalf("restore %+v, want kept %s, revision %d (snapshot's %d)", res, kept, oldRev+1, snapRev)
	}
	names, rev := loadNames(t, path)
	if !names["old-1"] || !names["old-2"] || names["new-0"] || rev != oldRev+1 {
		t.Fatalf("restored %v at %d", names, rev)
	}
	if names, _ := loadNames(t, kept); !names["new-9"] {
		t.Fatalf("kept file holds %v", names)
	}
	// The restored store is the snapshot's, identity and all.
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if uid := b.UID(); res.UID == "" || uid != res.UID {
		t.Errorf("restore said UID %q, the store holds %q", res.UID, uid)
	}
	b.Close()
	// A watch from any revision the replaced store gave out is gone.
	s2, _ := openBackend(t, path)
	if _, err := s2.Watch(context.Background(), store.WatchOptions{Kind: cmKind, Revision: oldRev}); !store.IsGone(err) {
		t.Fatalf("watch from the replaced store's revision %d: %v, want gone", oldRev, err)
	}
}

// Restoring into a data dir with no store puts the snapshot there as it
// is.
func TestRestoreFresh(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "snap.db")
	if err := os.WriteFile(snap, snapshotBytes(t, "a"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	res, err := Restore(snap, path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept != "" || res.Bumped || res.Objects == 0 {
		t.Fatalf("restore %+v", res)
	}
	if names, _ := loadNames(t, path); !names["a"] {
		t.Fatalf("restored %v", names)
	}
}

// Verify never panics, whatever the file holds, and what it passes a
// server opens and a restore puts in place.
func FuzzVerify(f *testing.F) {
	good := snapshotBytes(f, "a", "b")
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0}, 8192))
	dir := f.TempDir()
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, fmt.Sprintf("f%d.db", n.Add(1)))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		_, verr := Verify(path)
		if verr != nil && !strings.Contains(verr.Error(), path) {
			t.Fatalf("error does not name the file: %v", verr)
		}
		if verr == nil {
			restored := filepath.Join(t.TempDir(), "state.db")
			if _, err := Restore(path, restored, time.Now()); err != nil {
				t.Fatalf("verified, then restore: %v", err)
			}
		}
		// A server starting on such a file refuses it the same way.
		b, err := Open(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("open: error does not name the file: %v", err)
			}
			return
		}
		b.Close()
	})
}

// A snapshot whose keys are out of order (two swapped in place, the file
// otherwise whole) is refused by Verify as a server's open refuses it, so
// that a restore does not put it in place: opened for writing, bbolt's
// freelist walk panics on it.
func TestVerifyRefusesKeysOutOfOrder(t *testing.T) {
	s, b := openBackend(t, filepath.Join(t.TempDir(), "state.db"))
	for _, n := range []string{"c1", "c2", "c3"} {
		// Big enough that the bucket has a page of its own.
		if _, err := s.Create(context.Background(), configMap(n, map[string]string{"v": strings.Repeat("x", 1500)})); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := b.WriteSnapshot(&buf, func(SnapshotInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	k1, k2 := []byte("default/c1"), []byte("default/c2")
	i1, i2 := bytes.Index(data, k1), bytes.Index(data, k2)
	if i1 < 0 || i2 < 0 {
		t.Fatal("keys not found")
	}
	copy(data[i1:], k2)
	copy(data[i2:], k1)
	refusedEverywhere(t, data, "out of order")
}

// loopedStore is a store file whose root page is a branch that refers to
// itself.
func loopedStore(t *testing.T) []byte {
	t.Helper()
	data := snapshotBytes(t, "a")
	ps := uint64(binary.LittleEndian.Uint32(data[pageHeaderSize+8:]))
	root := binary.LittleEndian.Uint64(data[pageHeaderSize+16:])
	p := data[root*ps : (root+1)*ps]
	clear(p[8:])
	binary.LittleEndian.PutUint16(p[8:], branchPageFlag)
	binary.LittleEndian.PutUint16(p[10:], 1)
	e := p[pageHeaderSize : pageHeaderSize+elementSize]
	binary.LittleEndian.PutUint32(e, elementSize) // the key follows the element
	binary.LittleEndian.PutUint32(e[4:], 1)
	binary.LittleEndian.PutUint64(e[8:], root)
	p[pageHeaderSize+2*elementSize] = 'a'
	return data
}

// A store damaged so that its page tree loops, the case for a restore,
// is replaced and kept; its revision is not read, where reading it had
// bbolt descend until its stack overflowed.
func TestRestoreOverDamagedStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	if err := os.WriteFile(path, loopedStore(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(path); err == nil || !strings.Contains(err.Error(), "referenced twice") {
		t.Fatalf("the damaged store verifies: %v", err)
	}
	snap := filepath.Join(dir, "snap.db")
	if err := os.WriteFile(snap, snapshotBytes(t, "kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(snap, path, time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept != path+".before-restore-20260304T050607Z" || res.Bumped {
		t.Fatalf("restore %+v", res)
	}
	if names, _ := loadNames(t, path); !names["kept"] {
		t.Fatalf("restored %v", names)
	}
}

// A client that stalls on the snapshot's stream holds no writer back:
// writes that grow the file go on while the copy waits to be read, and
// the copy, read after them, is of the moment it began.
func TestSnapshotStalledReaderDoesNotHoldWriters(t *testing.T) {
	s, b := openBackend(t, filepath.Join(t.TempDir(), "state.db"))
	ctx := context.Background()
	if _, err := s.Create(ctx, configMap("before", nil)); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	begun := make(chan SnapshotInfo, 1)
	copied := make(chan error, 1)
	go func() {
		_, err := b.WriteSnapshot(pw, func(info SnapshotInfo) error {
			begun <- info
			return nil
		})
		pw.CloseWithError(err)
		copied <- err
	}()
	t.Cleanup(func() {
		pr.Close()
		<-copied
	})
	info := <-begun
	// Nothing reads pr yet. These writes grow the file well past its
	// first mapping.
	written := make(chan error, 1)
	go func() {
		for i := range 200 {
			if _, err := s.Create(ctx, configMap(fmt.Sprintf("during-%d", i), map[string]string{"v": strings.Repeat("x", 4000)})); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	select {
	case err := <-written:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writes are held back while the snapshot's reader stalls")
	}
	path := filepath.Join(t.TempDir(), "snap.db")
	got, err := WriteSnapshotFile(pr, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-copied; err != nil {
		t.Fatal(err)
	}
	copied <- nil // for the cleanup
	if got.Revision != info.Revision || got.Size != info.Size {
		t.Fatalf("copy %+v, begun as %+v", got, info)
	}
	names, _ := loadNames(t, path)
	if !names["before"] || names["during-0"] {
		t.Fatalf("the copy holds %d configmaps, want only the one written before it began", len(names))
	}
	// The spool is gone.
	entries, err := os.ReadDir(filepath.Dir(b.db.Path()))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "snapshot") {
			t.Errorf("left %s", e.Name())
		}
	}
}

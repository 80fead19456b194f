package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// refusedEverywhere checks that the damaged store file data is refused
// by Verify, saying want, by a server's open and by a restore, each with
// an error naming the file, and that the restore put nothing in place.
func refusedEverywhere(t *testing.T, data []byte, want string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "snap.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
		t.Errorf("verify: %v, want an error naming %s and saying %q", err, path, want)
	}
	if b, err := Open(path); err == nil {
		b.Close()
		t.Errorf("a server opened it")
	} else if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("open: %v", err)
	}
	restored := filepath.Join(dir, "state.db")
	if _, err := Restore(path, restored, time.Now()); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("restore: %v", err)
	}
	if _, err := os.Stat(restored); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a store was put in place: %v", err)
	}
}

// metaField rewrites the field at off (a byte offset in the meta) of both
// meta pages of a bolt file, with their checksums, as a file damaged
// where the checksum still holds would have them.
func metaField(data []byte, off int, v uint64) []byte {
	out := append([]byte(nil), data...)
	ps := int(binary.LittleEndian.Uint32(out[pageHeaderSize+8:]))
	for i := range 2 {
		m := out[i*ps+pageHeaderSize : i*ps+pageHeaderSize+64]
		binary.LittleEndian.PutUint64(m[off:], v)
		h := fnv.New64a()
		h.Write(m[:56])
		binary.LittleEndian.PutUint64(m[56:], h.Sum64())
	}
	return out
}

// withFreelist is a store file whose freelist is written, as bbolt writes
// it when a file is opened without NoFreelistSync (a restore does), and
// the id of its freelist page.
func withFreelist(t *testing.T) ([]byte, uint64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	for i := range 20 {
		if _, err := s.Create(context.Background(), configMap(fmt.Sprintf("c%d", i), map[string]string{"v": strings.Repeat("x", 3000)})); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A write, which frees the pages it replaces.
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketName(cmKind)).Delete(objectKey("default", "c0"))
	})
	if err == nil {
		err = db.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := binary.LittleEndian.Uint32(data[pageHeaderSize+8:])
	m0, m1 := data[pageHeaderSize:], data[ps+pageHeaderSize:]
	m := m0
	if binary.LittleEndian.Uint64(m1[48:]) > binary.LittleEndian.Uint64(m0[48:]) {
		m = m1
	}
	id := binary.LittleEndian.Uint64(m[32:])
	if id == ^uint64(0) { // bbolt's mark of a freelist not written
		t.Fatal("no freelist written")
	}
	return data, id
}

// A file whose freelist page is out of the file, is not a freelist, or
// frees a page the tree uses is refused by Verify, by a server's open
// and by a restore, with an error naming it: bbolt reads that page as it
// finds it when it opens a file for writing, and faults (a crash no
// recover catches) or panics.
func TestDamagedFreelistRefused(t *testing.T) {
	good := snapshotBytes(t, "a", "b")
	hwm := binary.LittleEndian.Uint64(good[pageHeaderSize+40:])
	root := binary.LittleEndian.Uint64(good[pageHeaderSize+16:])
	synced, fl := withFreelist(t)
	ps := uint64(binary.LittleEndian.Uint32(synced[pageHeaderSize+8:]))
	freesRoot := append([]byte(nil), synced...)
	p := freesRoot[fl*ps:]
	binary.LittleEndian.PutUint16(p[10:], 1)
	binary.LittleEndian.PutUint64(p[pageHeaderSize:], binary.LittleEndian.Uint64(synced[pageHeaderSize+16:]))
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"freelist past the end":      {metaField(good, 32, hwm+1000), "freelist page"},
		"freelist on a tree page":    {metaField(good, 32, root), "is a page of the tree"},
		"freelist frees a page used": {freesRoot, "is free and in use"},
	} {
		t.Run(name, func(t *testing.T) { refusedEverywhere(t, c.data, c.want) })
	}
	// The file with its freelist written is whole.
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, synced, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(path); err != nil {
		t.Fatal(err)
	}
}

// bucketValue is the offset in data, a store file, of the value of a
// top-level bucket: its root page id, then, for a bucket that fits in its
// parent's leaf, the page it carries inline. The root tree is walked down
// from the meta page, through branch pages once there are buckets enough
// to split it.
func bucketValue(t *testing.T, data []byte, bucket string) int {
	t.Helper()
	ps := int(binary.LittleEndian.Uint32(data[pageHeaderSize+8:]))
	id := int(binary.LittleEndian.Uint64(data[pageHeaderSize+16:]))
	for {
		p := data[id*ps : (id+1)*ps]
		flags, count := binary.LittleEndian.Uint16(p[8:]), int(binary.LittleEndian.Uint16(p[10:]))
		if flags == branchPageFlag {
			// A branch element: pos, ksize, then the child's page id. The
			// child to follow is the last whose first key is not above the
			// bucket's name.
			next := -1
			for i := range count {
				off := pageHeaderSize + i*elementSize
				pos, ksize := int(binary.LittleEndian.Uint32(p[off:])), int(binary.LittleEndian.Uint32(p[off+4:]))
				if i > 0 && string(p[off+pos:off+pos+ksize]) > bucket {
					break
				}
				next = int(binary.LittleEndian.Uint64(p[off+8:]))
			}
			if next < 0 {
				break
			}
			id = next
			continue
		}
		// A leaf element: flags, pos, ksize, vsize; the value follows the key.
		for i := range count {
			off := pageHeaderSize + i*elementSize
			pos, ksize := int(binary.LittleEndian.Uint32(p[off+4:])), int(binary.LittleEndian.Uint32(p[off+8:]))
			if string(p[off+pos:off+pos+ksize]) == bucket {
				return id*ps + off + pos + ksize
			}
		}
		break
	}
	t.Fatalf("no bucket %s in the root tree", bucket)
	return 0
}

// inlinePage is the offset in data of the page a bucket carries inline.
func inlinePage(t *testing.T, data []byte, bucket string) int {
	return bucketValue(t, data, bucket) + bucketValueSize
}

// A page that is neither a branch nor a leaf, or a branch with nothing
// in it, is refused even when it holds no elements: bbolt takes a page
// that is not a leaf for a branch and descends into its first element,
// which for an inline bucket's page is the same page again, for ever,
// until memory runs out.
func TestPageOfNoKindRefused(t *testing.T) {
	for name, c := range map[string]struct {
		flags uint16
		want  string
	}{
		"neither branch nor leaf": {0, "not a branch or leaf page"},
		"an empty branch":         {branchPageFlag, "a branch page with no elements"},
	} {
		t.Run(name, func(t *testing.T) {
			data := snapshotBytes(t, "a")
			off := inlinePage(t, data, "pods")
			binary.LittleEndian.PutUint16(data[off+8:], c.flags)
			binary.LittleEndian.PutUint16(data[off+10:], 0)
			refusedEverywhere(t, data, c.want)
		})
	}
}

// A branch whose key for a page is above that page's first key, the keys
// as a cursor reads them still in order, is refused by the page walk.
// bbolt's check finds it too, but in a goroutine of its own when it
// rebuilds the freelist of a file it opens or checks: there the error is
// a panic while the check goes on reading the file as it is unmapped, a
// crash that no recover catches.
func TestBranchKeyAbovePageRefused(t *testing.T) {
	var names []string
	for i := range 150 {
		names = append(names, fmt.Sprintf("config-%d-%s", i, strings.Repeat("k", i%40)))
	}
	data := snapshotBytes(t, names...)
	ps := int(binary.LittleEndian.Uint32(data[pageHeaderSize+8:]))
	id := int(binary.LittleEndian.Uint64(data[bucketValue(t, data, "configmaps"):]))
	p := data[id*ps : (id+1)*ps]
	if flags := binary.LittleEndian.Uint16(p[8:]); flags != branchPageFlag || binary.LittleEndian.Uint16(p[10:]) < 3 {
		t.Fatalf("the configmaps' root page %d is not a branch of 3 or more (flags %#x)", id, flags)
	}
	key := func(i int) []byte {
		off := pageHeaderSize + i*elementSize
		pos, ksize := int(binary.LittleEndian.Uint32(p[off:])), int(binary.LittleEndian.Uint32(p[off+4:]))
		return p[off+pos : off+pos+ksize]
	}
	// Element 1's key, the first key of its page, raised in its last
	// byte: still below element 2's, above its page's first key only.
	k := key(1)
	k[len(k)-1] = 0xff
	if bytes.Compare(k, key(2)) >= 0 {
		t.Fatalf("the raised key %q is not below the next %q", k, key(2))
	}
	refusedEverywhere(t, data, "key 0 out of order")
}

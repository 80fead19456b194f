package bolt

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-dev/berth/store"
)

// TestUIDKeptWithTheFile checks that a store's identity lives in its file:
// reopened, it is the same; a new file gets another.
func TestUIDKeptWithTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	uid := b.UID()
	if uid == "" {
		t.Fatal("a new store has no UID")
	}
	b.Close()
	b, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.UID(); got != uid {
		t.Errorf("reopened: UID %q, was %q", got, uid)
	}
	b.Close()
	other, err := Open(filepath.Join(dir, "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.UID() == uid {
		t.Errorf("two stores share the UID %q", uid)
	}
}

// TestDamagedNewestMetaPageLogged damages the meta page of the last
// commit: bbolt reads the older one, which loses that commit, and the
// open says so, naming the transaction lost.
func TestDamagedNewestMetaPageLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		if _, err := s.Create(ctx, configMap(name, nil)); err != nil {
			t.Fatal(err)
		}
	}
	rev := s.Revision()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := readMetas(f, 4096)
	if err != nil {
		t.Fatal(err)
	}
	newest := 0
	if metas[1].txid > metas[0].txid {
		newest = 1
	}
	if !metas[0].valid || !metas[1].valid {
		t.Fatalf("meta pages of a whole file: %+v", metas)
	}
	// One byte of the root bucket's page id: the checksum no longer holds.
	b := []byte{0}
	off := int64(newest*4096 + pageHeaderSize + 16)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var logged bytes.Buffer
	bk, err := OpenWith(path, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(bk, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.Revision(); got != rev-1 {
		t.Fatalf("revision %d after the newest meta page was damaged, want %d (the commit before)", got, rev-1)
	}
	want := []string{"meta page", "damaged", "transaction " + strconv.FormatUint(metas[newest].txid, 10), "is lost", path}
	for _, w := range want {
		if !strings.Contains(logged.String(), w) {
			t.Errorf("the log does not say %q:\n%s", w, logged.String())
		}
	}
}

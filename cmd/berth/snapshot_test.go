package main

import (
	"bytes"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/pki"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/bolt"
)

// goodSnapshot is the bytes of a small store file.
func goodSnapshot(t *testing.T) []byte {
	t.Helper()
	b, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.New(b, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var buf bytes.Buffer
	if _, err := b.WriteSnapshot(&buf, func(bolt.SnapshotInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A download cut short, with or without a Content-Length, or one that is
// not a store, fails and leaves no file; a whole one is saved.
func TestSnapshotSaveStream(t *testing.T) {
	good := goodSnapshot(t)
	for name, c := range map[string]struct {
		send   []byte
		length int
		ok     bool
		want   string
	}{
		"whole":                 {good, len(good), true, "Snapshot saved to"},
		"cut, with a length":    {good[:len(good)/2], len(good), false, "unexpected EOF"},
		"cut, without a length": {good[:len(good)-4096], -1, false, "truncated"},
		"not a store":           {bytes.Repeat([]byte("x"), 8192), 8192, false, "invalid"},
		"refused by the server": {nil, 0, false, "Error from server (Forbidden)"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != controlplane.SnapshotPath || r.Header.Get("Authorization") != "Bearer tok" {
					http.Error(w, "wrong request", http.StatusBadRequest)
					return
				}
				if c.send == nil {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusForbidden)
					w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"only the admin may take a snapshot of the store"}`))
					return
				}
				if c.length >= 0 {
					w.Header().Set("Content-Length", strconv.Itoa(c.length))
				}
				w.WriteHeader(http.StatusOK)
				w.Write(c.send)
				if c.length > len(c.send) {
					panic(http.ErrAbortHandler) // the connection drops
				}
			}))
			t.Cleanup(srv.Close)
			dir := t.TempDir()
			kc := filepath.Join(dir, "kubeconfig")
			ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
			if err := pki.WriteKubeconfig(kc, srv.URL, ca, "tok"); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "snap", "berth.db")
			if err := os.Mkdir(filepath.Dir(out), 0o700); err != nil {
				t.Fatal(err)
			}
			r := runBerth(t, "", "--kubeconfig", kc, "snapshot", "save", out)
			if c.ok {
				if r.code != exitOK || !strings.Contains(r.stdout, c.want) {
					t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
				}
				if _, err := bolt.Verify(out); err != nil {
					t.Fatal(err)
				}
				return
			}
			if r.code != exitFailure || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stderr %q, want %q", r.code, r.stderr, c.want)
			}
			if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
				t.Fatalf("left %v", entries)
			}
		})
	}
}

// Restore wants its data dir, and refuses a file that is not a store.
func TestSnapshotRestoreRefusals(t *testing.T) {
	dir := t.TempDir()
	if r := runBerth(t, "", "snapshot", "restore", "x.db"); r.code != exitUsage || !strings.Contains(r.stderr, "--data-dir is required") {
		t.Fatalf("no data dir: %+v", r)
	}
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBerth(t, "", "snapshot", "restore", bad, "--data-dir", dir)
	if r.code != exitFailure || !strings.Contains(r.stderr, bad) {
		t.Fatalf("bad file: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, controlplane.StoreFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a store was put in place: %v", err)
	}
}

// Restore into a data dir that does not exist yet makes it.
func TestSnapshotRestoreNewDataDir(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "berth.db")
	if err := os.WriteFile(snap, goodSnapshot(t), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "new", "data")
	r := runBerth(t, "", "snapshot", "restore", snap, "--data-dir", dataDir)
	if r.code != exitOK || !strings.Contains(r.stdout, "Restored "+snap+" into "+dataDir) {
		t.Fatalf("%+v", r)
	}
	if _, err := bolt.Verify(filepath.Join(dataDir, controlplane.StoreFile)); err != nil {
		t.Fatal(err)
	}
	// The data dir records the restored store, so that a server starts
	// on it.
	b, err := bolt.Open(filepath.Join(dataDir, controlplane.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, err := controlplane.ReadStoreUID(dataDir); err != nil || got != b.UID() {
		t.Fatalf("the data dir records store %q (%v), the restored store is %q", got, err, b.UID())
	}
}

// Repair drops an object that cannot be read, naming it, and keeps the
// rest; a whole store is left alone.
func TestSnapshotRepair(t *testing.T) {
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, controlplane.StoreFile)
	if err := os.WriteFile(path, goodSnapshot(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runBerth(t, "", "snapshot", "repair"); r.code != exitUsage || !strings.Contains(r.stderr, "--data-dir is required") {
		t.Fatalf("no data dir: %+v", r)
	}
	if r := runBerth(t, "", "snapshot", "repair", "--data-dir", dataDir); r.code != exitOK || !strings.Contains(r.stdout, "nothing to repair") {
		t.Fatalf("a whole store: %+v", r)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("configmaps")).Put([]byte("default/broken"), []byte("{"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := runBerth(t, "", "snapshot", "repair", "--data-dir", dataDir)
	if r.code != exitOK || !strings.Contains(r.stdout, "Dropped configmaps default/broken") || !strings.Contains(r.stdout, "before-repair-") {
		t.Fatalf("%+v", r)
	}
	if _, err := bolt.Verify(path); err != nil {
		t.Fatalf("the repaired store: %v", err)
	}
}

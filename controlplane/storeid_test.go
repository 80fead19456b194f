package controlplane

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// newQuiet makes a control plane of dataDir, as `berth server` would with
// reset as --reset-store, without running it.
func newQuiet(t *testing.T, dataDir, storeKind string, reset bool) (*Server, error) {
	t.Helper()
	s, err := New(context.Background(), Config{
		DataDir: dataDir, Listen: "127.0.0.1:0", Store: storeKind, ResetStore: reset,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err == nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			s.Run(ctx)
		})
	}
	return s, err
}

// A data dir that held a store refuses to start when state.db was emptied
// or deleted, with the way to restore it and the flag that starts afresh;
// with the flag, the store it starts is another (a new UID), which the
// data dir records, so the next start needs no flag.
func TestEmptiedStoreRefused(t *testing.T) {
	for _, how := range []string{"truncated", "deleted"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			r := startControlPlane(t, dir, StoreBolt)
			old := r.Store().UID()
			if _, err := r.Store().Create(context.Background(), &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}}); err != nil {
				t.Fatal(err)
			}
			r.stop()
			if got, _ := ReadStoreUID(dir); got != old || old == "" {
				t.Fatalf("the data dir recorded store %q, the store is %q", got, old)
			}
			path := filepath.Join(dir, StoreFile)
			var err error
			if how == "truncated" {
				err = os.Truncate(path, 0)
			} else {
				err = os.Remove(path)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = newQuiet(t, dir, StoreBolt, false)
			if err == nil {
				t.Fatalf("a data dir whose state.db was %s started", how)
			}
			for _, want := range []string{path, old, "berth snapshot restore FILE --data-dir " + dir, "--reset-store"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q: %v", want, err)
				}
			}
			s, err := newQuiet(t, dir, StoreBolt, true)
			if err != nil {
				t.Fatalf("--reset-store: %v", err)
			}
			uid := s.Store().UID()
			if uid == old || uid == "" {
				t.Errorf("the fresh store has UID %q, the old one had %q", uid, old)
			}
			if _, err := s.Store().Get(api.MustLookupResource("configmaps"), "default", "kept"); err == nil {
				t.Error("the fresh store holds the old one's configmap")
			}
			if got, _ := ReadStoreUID(dir); got != uid {
				t.Errorf("the data dir records %q after the reset, the store is %q", got, uid)
			}
		})
	}
}

// A state.db of another store put in place of the data dir's own is
// refused too, unless --reset-store takes it.
func TestAnotherStoreRefused(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	startControlPlane(t, dir, StoreBolt).stop()
	startControlPlane(t, other, StoreBolt).stop()
	data, err := os.ReadFile(filepath.Join(other, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, StoreFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newQuiet(t, dir, StoreBolt, false); err == nil || !strings.Contains(err.Error(), "another store") {
		t.Fatalf("another data dir's state.db: %v", err)
	}
	if _, err := newQuiet(t, dir, StoreBolt, true); err != nil {
		t.Fatalf("--reset-store with another data dir's state.db: %v", err)
	}
}

// --store memory or etcd on a data dir that holds a bolt store would
// serve an empty cluster under its credentials: refused.
func TestOtherStoreKindRefusedOnABoltDataDir(t *testing.T) {
	dir := t.TempDir()
	startControlPlane(t, dir, StoreBolt).stop()
	for _, kind := range []string{StoreMemory, StoreEtcdScheme + "127.0.0.1:1"} {
		_, err := newQuiet(t, dir, kind, false)
		if err == nil || !strings.Contains(err.Error(), "holds the bolt store") {
			t.Errorf("--store %s on a bolt data dir: %v", kind, err)
		}
	}
}

// An object whose JSON is broken refuses the start, naming it and saying
// how to go on.
func TestDamagedObjectAdvice(t *testing.T) {
	dir := t.TempDir()
	startControlPlane(t, dir, StoreBolt).stop()
	db, err := bbolt.Open(filepath.Join(dir, StoreFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("configmaps")).Put([]byte("default/broken"), []byte(`{"metadata":`))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = newQuiet(t, dir, StoreBolt, false)
	if err == nil {
		t.Fatal("a store with a broken object started")
	}
	for _, want := range []string{"configmaps default/broken", "berth snapshot repair --data-dir " + dir, "berth snapshot restore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
}

// GET /berth/v1/store answers the store's UID to a credential, and
// nothing to a client without one.
func TestStoreInfoEndpoint(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), StoreBolt)
	get := func(user string, token bool) *http.Response {
		return apiRequest(t, r, http.MethodGet, api.StorePath, user, token)
	}
	resp := get("system:node:n1", true)
	var info api.StoreInfo
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a node: %s, %v", resp.Status, err)
	}
	if info.UID == "" || info.UID != r.Store().UID() {
		t.Errorf("served UID %q, the store's %q", info.UID, r.Store().UID())
	}
	if resp := get("", false); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no credential: %s", resp.Status)
	}
}

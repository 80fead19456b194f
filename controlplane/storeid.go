package controlplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/internal/atomicfile"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/bolt"
)

// StoreUIDFile, in the data dir, records the identity of the bolt store
// the data dir holds (state.db's UID), written when it first opens. With
// it the data dir knows it held a store: a state.db emptied or deleted
// since is refused, not replaced by an empty cluster under the same
// credentials, whose agents would stop every pod it does not hold.
const StoreUIDFile = "store-uid"

// ReadStoreUID reads the store identity the data dir recorded, "" when it
// recorded none.
func ReadStoreUID(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, StoreUIDFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store identity: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// RecordStoreUID records uid as the store the data dir holds: what a
// server does on its first start, and `berth snapshot restore` and
// `repair` for the store they put in place.
func RecordStoreUID(dataDir, uid string) error {
	if err := atomicfile.WriteFile(filepath.Join(dataDir, StoreUIDFile), []byte(uid+"\n"), 0o600); err != nil {
		return fmt.Errorf("store identity: %w", err)
	}
	return nil
}

// StoreMissingError is the refusal to start a bolt store in a data dir
// that held one whose file is now missing or empty.
type StoreMissingError struct {
	DataDir, Path, UID string
	// Empty is set when the file is there with no bytes, unset when it
	// is missing.
	Empty bool
}

func (e *StoreMissingError) Error() string {
	what := "is missing"
	if e.Empty {
		what = "is empty"
	}
	return fmt.Sprintf("store %s %s, but this data dir held a store (%s %s): starting would serve an empty cluster under its credentials. "+
		"Restore the last snapshot with `berth snapshot restore FILE --data-dir %s` (or put state.db back), then start again; "+
		"to start an empty cluster on purpose, start once with --reset-store (agents that joined the old store keep its pods running and say so)",
		e.Path, what, StoreUIDFile, e.UID, e.DataDir)
}

// openBolt opens the data dir's bolt store, refusing one that is not the
// store the data dir recorded (StoreUIDFile) unless reset, and records
// the store it opens.
func openBolt(dataDir string, reset bool, log *slog.Logger) (*bolt.Backend, error) {
	recorded, err := ReadStoreUID(dataDir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dataDir, StoreFile)
	st, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	gone := err != nil || st.Size() == 0
	if recorded != "" && gone {
		if !reset {
			return nil, &StoreMissingError{DataDir: dataDir, Path: path, UID: recorded, Empty: err == nil}
		}
		log.Warn("--reset-store: starting an empty store in place of the one this data dir held", "file", path, "was", recorded)
	}
	b, err := bolt.OpenWith(path, bolt.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	uid := b.UID()
	switch {
	case recorded == uid:
		if reset {
			log.Warn("--reset-store: the store is the one this data dir holds, and nothing was reset; start without the flag", "file", path, "store", uid)
		}
		return b, nil
	case recorded != "" && !gone && !reset:
		b.Close()
		return nil, fmt.Errorf("store %s is store %s, but this data dir held store %s (%s): it is another store, whose cluster's agents would stop every pod it does not hold. "+
			"Put this data dir's own store back (`berth snapshot restore FILE --data-dir %s` records the store it restores), or start once with --reset-store to take this one",
			path, uid, recorded, StoreUIDFile, dataDir)
	case recorded != "":
		log.Warn("--reset-store: this data dir now holds another store", "file", path, "store", uid, "was", recorded)
	}
	if err := RecordStoreUID(dataDir, uid); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// checkNoBoltStore refuses a store that is not bolt (memory, etcd) on a
// data dir that holds a bolt store: --store given by mistake, it would
// serve an empty cluster under that one's credentials.
func checkNoBoltStore(dataDir, storeFlag string) error {
	uid, err := ReadStoreUID(dataDir)
	if err != nil || uid == "" {
		return err
	}
	return fmt.Errorf("this data dir holds the bolt store %s (store %s), and --store %s would serve an empty cluster under its credentials: start it without --store as before, or give --data-dir a directory of its own",
		filepath.Join(dataDir, StoreFile), uid, storeFlag)
}

// RepairStore rewrites the data dir's store without the objects that
// cannot be read (`berth snapshot repair`), as bolt.Repair does.
func RepairStore(dataDir string, now time.Time) (bolt.RepairResult, error) {
	return bolt.Repair(filepath.Join(dataDir, StoreFile), now)
}

// damagedStoreAdvice adds to an error that a store file holds an object
// that cannot be read what to do about it.
func damagedStoreAdvice(err error, dataDir string) error {
	var dmg *bolt.DamagedObjectError
	if !errors.As(err, &dmg) {
		return err
	}
	return fmt.Errorf("%w. With the server stopped, `berth snapshot repair --data-dir %s` rewrites the store without what cannot be read (naming it, and keeping the old file beside it); "+
		"or restore the last snapshot with `berth snapshot restore FILE --data-dir %s`", err, dataDir, dataDir)
}

// storeInfoHandler answers GET api.StorePath with the store's identity
// (agents compare it with the one they joined before they stop a pod
// the store does not hold), to anyone with a credential.
type storeInfoHandler struct {
	store *store.Store
}

func (h storeInfoHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		apiserver.WriteError(w, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
			Message: fmt.Sprintf("the store's identity is read with GET, not %s", r.Method),
		}})
		return
	}
	if id, _ := auth.IdentityFromContext(r.Context()); id == nil {
		apiserver.WriteError(w, apierrors.NewUnauthorized("a credential is needed to read the store's identity"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(api.StoreInfo{UID: h.store.UID()})
}

package bolt

import (
	"errors"
	"fmt"
	"os"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// BeforeRestoreSuffix is put, with the time of the restore, after the
// name of the store file a restore replaced: state.db.before-restore-<time>.
const BeforeRestoreSuffix = ".before-restore-"

// RestoreResult says what a restore did.
type RestoreResult struct {
	SnapshotInfo
	// Kept is where the replaced store file was moved ("" when there was
	// none).
	Kept string
	// Bumped is set when the restored revision was raised past the
	// replaced store's (Revision is then the raised one).
	Bumped bool
	// UID is the restored store's identity: the snapshot's, or a new one
	// written into a snapshot from before stores had one.
	UID string
}

// Restore puts the snapshot at snapshot in place of the store file at
// path, which no process may hold: it refuses while a server has path
// open. The replaced file is kept beside it, named for now. The snapshot
// is copied (not moved), fsynced and verified before anything is renamed.
//
// The restored revision is raised past the replaced store's, as etcd's
// restore bumps its revision: every resourceVersion a client saw from the
// replaced store is then older than the restored store's revision, so
// that a watch from one is answered 410 Gone and the client lists again,
// rather than resumed at a revision the restored history reuses for other
// changes.
func Restore(snapshot, path string, now time.Time) (RestoreResult, error) {
	var res RestoreResult
	if _, err := Verify(snapshot); err != nil {
		return res, err
	}
	in, err := os.Open(snapshot)
	if err != nil {
		return res, err
	}
	defer in.Close()
	old, oldRev, err := lockOld(path)
	if err != nil {
		return res, err
	}
	if old != nil {
		// Held until the new file is in place: a server that starts
		// meanwhile waits for it, then fails, rather than opening the old
		// file.
		defer old.Close()
	}
	kept := path + BeforeRestoreSuffix + now.UTC().Format("20060102T150405Z")
	info, err := WriteSnapshotFile(in, path, func() error {
		if err := bumpRevision(path+".tmp", oldRev, &res); err != nil {
			return err
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if _, err := os.Lstat(kept); err == nil {
			return fmt.Errorf("%s exists already", kept)
		}
		if err := os.Rename(path, kept); err != nil {
			return err
		}
		res.Kept = kept
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("restore %s into %s: %w", snapshot, path, err)
	}
	if res.Bumped {
		info.Revision = res.Revision
	}
	res.SnapshotInfo = info
	return res, nil
}

// lockOld takes a shared lock on the store file at path, if there is one,
// and reads its revision: an error when a server holds it. A file whose
// revision cannot be read (it is damaged: the reason to restore) is
// replaced all the same, with no revision known.
func lockOld(path string) (*bbolt.DB, uint64, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	var db *bbolt.DB
	var rev uint64
	err := guard(func() error {
		var err error
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: lockTimeout})
		if err != nil {
			return err
		}
		// The lock is held: read the revision only through a page tree
		// that checks, as one that loops has bbolt descend until its
		// stack overflows, which nothing recovers from.
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if err := checkPages(f, st.Size()); err != nil {
			return err
		}
		return db.View(func(tx *bbolt.Tx) error {
			if tx.Bucket(metaBucket) != nil {
				rev = revisionOf(tx)
			}
			return nil
		})
	})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, 0, fmt.Errorf("store %s is in use: stop the berth server that holds it first", path)
	}
	// With an error, db is nil where bbolt could not open the file, or
	// holds the lock on a file whose revision could not be read.
	return db, rev, nil
}

// bumpRevision raises the revision of the store file at tmp past
// oldRev, if it is not past it already, and reads its identity (making
// one for a file that has none).
func bumpRevision(tmp string, oldRev uint64, res *RestoreResult) error {
	db, err := bbolt.Open(tmp, 0o600, &bbolt.Options{Timeout: lockTimeout})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		var err error
		if res.UID, err = ensureUID(tx.Bucket(metaBucket)); err != nil {
			return err
		}
		rev := revisionOf(tx)
		res.Revision = rev
		if rev > oldRev {
			return nil
		}
		res.Revision, res.Bumped = oldRev+1, true
		return tx.Bucket(metaBucket).Put(revisionKey, u64(oldRev+1))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("raise the revision of %s: %w", tmp, err)
	}
	return nil
}

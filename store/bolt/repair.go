package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// BeforeRepairSuffix is put, with the time of the repair, after the name
// of the store file a repair replaced: state.db.before-repair-<time>.
const BeforeRepairSuffix = ".before-repair-"

// Dropped is an object a repair left out: it could not be read.
type Dropped struct {
	// Resource and Key name it as DamagedObjectError does.
	Resource, Key string
	// Reason is why it could not be read.
	Reason string
}

// RepairResult says what a repair did.
type RepairResult struct {
	SnapshotInfo
	// Kept is where the replaced store file was moved.
	Kept string
	// Dropped are the objects left out.
	Dropped []Dropped
	// UID is the store's identity, the replaced file's.
	UID string
}

// Repair rewrites the store file at path, which no process may hold,
// with every object that can be read, leaving out those that cannot (a
// value that is not its kind's JSON), which it names. The file's pages
// must be whole: a file bbolt cannot walk is refused, to be restored from
// a snapshot. The rewritten store keeps the file's identity, and its
// revision is raised by one, as a restore raises it, so that clients
// list again and see the objects left out gone. The replaced file is
// kept beside it, named for now. A file with nothing to leave out is left
// as it is.
func Repair(path string, now time.Time) (RepairResult, error) {
	res, err := repair(path, now)
	if err != nil {
		return res, fmt.Errorf("repair %s: %w", path, err)
	}
	return res, nil
}

func repair(path string, now time.Time) (RepairResult, error) {
	var res RepairResult
	st, err := os.Stat(path)
	if err != nil {
		return res, err
	}
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	if err := checkPages(f, st.Size()); err != nil {
		return res, fmt.Errorf("the file's pages are damaged (%w), past what a repair mends: restore a snapshot (berth snapshot restore)", err)
	}
	tmp := path + ".tmp"
	var held *bbolt.DB
	err = guard(func() error {
		var err error
		held, err = bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: lockTimeout})
		if err != nil {
			return err
		}
		return held.View(func(tx *bbolt.Tx) error {
			if err := checkLayout(tx); err != nil {
				return err
			}
			return writeRepaired(tx, tmp, &res)
		})
	})
	if held != nil {
		// Held until the new file is in place, as Restore holds it.
		defer held.Close()
	}
	if errors.Is(err, bbolt.ErrTimeout) {
		return res, errors.New("it is in use: stop the berth server that holds it first")
	}
	if err != nil {
		os.Remove(tmp)
		return res, err
	}
	if len(res.Dropped) == 0 {
		os.Remove(tmp)
		return res, nil
	}
	info, err := Verify(tmp)
	if err != nil {
		os.Remove(tmp)
		return res, err
	}
	res.SnapshotInfo = info
	kept := path + BeforeRepairSuffix + now.UTC().Format("20060102T150405Z")
	if _, err := os.Lstat(kept); err == nil {
		os.Remove(tmp)
		return res, fmt.Errorf("%s exists already", kept)
	}
	if err := os.Rename(path, kept); err != nil {
		os.Remove(tmp)
		return res, err
	}
	res.Kept = kept
	if err := os.Rename(tmp, path); err != nil {
		return res, err
	}
	return res, syncDir(filepath.Dir(path))
}

// writeRepaired writes into a new bolt file at tmp the store tx reads,
// with every object that decodes, and notes in res those that do not.
func writeRepaired(tx *bbolt.Tx, tmp string, res *RepairResult) error {
	os.Remove(tmp)
	out, err := bbolt.Open(tmp, 0o600, &bbolt.Options{Timeout: lockTimeout})
	if err != nil {
		return err
	}
	err = out.Update(func(otx *bbolt.Tx) error {
		meta, err := otx.CreateBucket(metaBucket)
		if err != nil {
			return err
		}
		if err := meta.Put(formatKey, u64(format)); err != nil {
			return err
		}
		if uid := tx.Bucket(metaBucket).Get(uidKey); len(uid) > 0 {
			if err := meta.Put(uidKey, uid); err != nil {
				return err
			}
		}
		if res.UID, err = ensureUID(meta); err != nil {
			return err
		}
		if err := meta.Put(revisionKey, u64(revisionOf(tx)+1)); err != nil {
			return err
		}
		for _, k := range buckets() {
			ob, err := otx.CreateBucket(bucketName(k))
			if err != nil {
				return err
			}
			in := tx.Bucket(bucketName(k))
			if in == nil {
				continue // custom resources, in a file from before them
			}
			err = in.ForEach(func(key, data []byte) error {
				if _, err := decodeObject(k, key, data); err != nil {
					var dmg *DamagedObjectError
					if errors.As(err, &dmg) {
						res.Dropped = append(res.Dropped, Dropped{Resource: dmg.Resource, Key: dmg.Key, Reason: dmg.Err.Error()})
						return nil
					}
					return err
				}
				return ob.Put(key, data)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berth-dev/berth/api"
)

// SnapshotInfo describes a copy of the store file.
type SnapshotInfo struct {
	// Revision is the newest revision the copy holds.
	Revision uint64
	// Size is the copy's length in bytes.
	Size int64
	// Objects is how many objects it holds (0 where it was not counted).
	Objects int
}

// WriteSnapshot writes a consistent copy of the whole file to w, taken in
// one read transaction: writers go on meanwhile, and the copy holds every
// transaction committed before it began and none after. begin is called
// with the copy's size and revision before the first byte is written (an
// HTTP handler sets Content-Length there); an error from it ends the copy
// unwritten.
//
// The transaction copies the file to a spool file beside it (which needs
// the room of one copy), and ends before w gets a byte: a write that
// grows the file remaps it under a lock that waits for every open read
// transaction, so one held while a slow or stalled client reads w would
// hold back every write of the server. The spool is unlinked at once, so
// that nothing is left of it whatever happens.
func (b *Backend) WriteSnapshot(w io.Writer, begin func(SnapshotInfo) error) (SnapshotInfo, error) {
	info, err := b.writeSnapshot(w, begin)
	if err != nil {
		return info, fmt.Errorf("snapshot: %w", err)
	}
	return info, nil
}

func (b *Backend) writeSnapshot(w io.Writer, begin func(SnapshotInfo) error) (SnapshotInfo, error) {
	var info SnapshotInfo
	path := b.db.Path()
	spool, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".snapshot-*")
	if err != nil {
		return info, err
	}
	defer spool.Close()
	if err := os.Remove(spool.Name()); err != nil {
		return info, err
	}
	err = b.db.View(func(tx *bbolt.Tx) error {
		info = SnapshotInfo{Revision: revisionOf(tx), Size: tx.Size()}
		_, err := tx.WriteTo(spool)
		return err
	})
	if err != nil {
		return info, fmt.Errorf("copy to %s: %w", spool.Name(), err)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return info, err
	}
	if err := begin(info); err != nil {
		return info, err
	}
	n, err := io.Copy(w, spool)
	if err == nil && n != info.Size {
		err = fmt.Errorf("wrote %d bytes of %d", n, info.Size)
	}
	return info, err
}

// revisionOf reads the newest revision a transaction sees.
func revisionOf(tx *bbolt.Tx) uint64 {
	if v := tx.Bucket(metaBucket).Get(revisionKey); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// checkLayout checks that a file holds the buckets of this berth's store
// in its format.
func checkLayout(tx *bbolt.Tx) error {
	meta := tx.Bucket(metaBucket)
	if meta == nil {
		return errors.New("no meta bucket: not a berth store")
	}
	v := meta.Get(formatKey)
	if len(v) != 8 {
		return errors.New("meta bucket: no store format")
	}
	if got := binary.BigEndian.Uint64(v); got != format {
		return fmt.Errorf("store format %d, this berth reads format %d", got, format)
	}
	if v := meta.Get(revisionKey); v != nil && len(v) != 8 {
		return fmt.Errorf("meta bucket: revision of %d bytes, want 8", len(v))
	}
	for _, k := range api.Kinds() { // a file from before custom resources has no bucket of them
		if tx.Bucket(bucketName(k)) == nil {
			return fmt.Errorf("no bucket %s", bucketName(k))
		}
	}
	return nil
}

// forEachObject decodes every object a transaction sees.
func forEachObject(tx *bbolt.Tx, fn func(api.Object) error) error {
	for _, k := range buckets() {
		bk := tx.Bucket(bucketName(k))
		if bk == nil {
			continue // custom resources, in a file from before them
		}
		err := bk.ForEach(func(key, data []byte) error {
			obj, err := decodeObject(k, key, data)
			if err != nil {
				return err
			}
			return fn(obj)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// DamagedObjectError is an object of the store file that cannot be read:
// its value is not the JSON of its kind. The rest of the file may be
// whole; Repair writes a store without it.
type DamagedObjectError struct {
	// Resource is the object's resource (configmaps, deployments.apps),
	// Key its key: namespace/name, or name.
	Resource, Key string
	Err           error
}

func (e *DamagedObjectError) Error() string {
	return fmt.Sprintf("decode %s %s: %v", e.Resource, e.Key, e.Err)
}

func (e *DamagedObjectError) Unwrap() error { return e.Err }

// decodeObject decodes the value stored at key in kind k's bucket.
func decodeObject(k *api.Kind, key, data []byte) (api.Object, error) {
	if data == nil {
		return nil, &DamagedObjectError{Resource: k.GroupResource().String(), Key: string(key), Err: errors.New("a bucket, not an object")}
	}
	var obj api.Object
	if k.Custom {
		obj = &unstructured.Unstructured{}
	} else {
		obj = k.New()
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, &DamagedObjectError{Resource: k.GroupResource().String(), Key: string(key), Err: err}
	}
	return obj, nil
}

// lockTimeout is how long opening a file waits for another process's
// lock on it.
const lockTimeout = time.Second

// Verify checks that the file at path is a whole store of this berth:
// a bolt file that passes the check a server's open makes (checkFile),
// with the store's format, its buckets, and every object decodable, so
// that a server opens what verifies. It opens the file read-only and
// never changes it. A file bbolt cannot read is an error, never a
// crash: bbolt trusts the pages it maps and may panic or fault on a
// corrupt one, so the reading is guarded.
func Verify(path string) (SnapshotInfo, error) {
	info, err := verifyFile(path)
	if err != nil {
		return info, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return info, nil
}

func verifyFile(path string) (info SnapshotInfo, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return info, err
	}
	if !st.Mode().IsRegular() {
		return info, errors.New("not a regular file")
	}
	info.Size = st.Size()
	if info.Size == 0 {
		return info, errors.New("empty file")
	}
	f, err := os.Open(path)
	if err != nil {
		return info, err
	}
	defer f.Close()
	err = checkFile(f, info.Size, func(tx *bbolt.Tx) error {
		if err := checkLayout(tx); err != nil {
			return err
		}
		info.Revision = revisionOf(tx)
		return forEachObject(tx, func(api.Object) error {
			info.Objects++
			return nil
		})
	})
	if errors.Is(err, bbolt.ErrTimeout) {
		return info, errors.New("another process is using it")
	}
	return info, err
}

// guard runs fn, which reads a file bbolt maps, on a goroutine of its
// own that panics on a memory fault (a page past the end of a short
// file) rather than crashing, and turns a panic into an error.
func guard(fn func() error) (err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("corrupt: %v", p)
			}
		}()
		debug.SetPanicOnFault(true)
		err = fn()
	}()
	<-done
	return err
}

// WriteSnapshotFile writes the snapshot r holds to path: first into
// path+".tmp", fsynced and verified, then renamed over path (after
// beforeRename, when not nil, which may move the old file aside), so that
// path is either the whole checked snapshot or as it was. A short or
// corrupt stream is an error and leaves no file behind.
func WriteSnapshotFile(r io.Reader, path string, beforeRename func() error) (SnapshotInfo, error) {
	tmp := path + ".tmp"
	info, err := writeVerified(r, tmp)
	if err == nil && beforeRename != nil {
		err = beforeRename()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return info, err
	}
	return info, nil
}

func writeVerified(r io.Reader, tmp string) (SnapshotInfo, error) {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return SnapshotInfo{}, err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("write %s: %w", tmp, err)
	}
	return Verify(tmp)
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var (
	metaBucket  = []byte("meta")
	revisionKey = []byte("revision")
	formatKey   = []byte("format")
	// uidKey holds the store's identity, made when the file is made: a
	// data dir records it (see controlplane), and agents compare it with
	// the one they joined before they stop a pod the store does not hold.
	uidKey = []byte("uid")
)

// format is the layout version written into the file.
const format = 1

// Backend keeps the store in one bbolt file.
type Backend struct {
	db  *bbolt.DB
	uid string
}

var (
	_ store.Recoverable = (*Backend)(nil)
	_ store.Identified  = (*Backend)(nil)
)

// Options tune Open. The zero value is usable.
type Options struct {
	// Logger receives what Open found and mended on its own: a damaged
	// meta page bbolt read past, and with it a lost commit. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Open opens or creates the store file at path, with the default Options.
func Open(path string) (*Backend, error) { return OpenWith(path, Options{}) }

// OpenWith opens or creates the store file at path. It fails at once if
// another process holds the file.
func OpenWith(path string, opts Options) (*Backend, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := checkIntact(path, opts.Logger); err != nil {
		return nil, err
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout:        time.Second,
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
	})
	if err != nil {
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, fmt.Errorf("open store %s: another process is using it", path)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	var uid string
	err = db.Update(func(tx *bbolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if v := meta.Get(formatKey); v != nil {
			if got := binary.BigEndian.Uint64(v); got != format {
				return fmt.Errorf("store format %d, this berth reads format %d", got, format)
			}
		} else if err := meta.Put(formatKey, u64(format)); err != nil {
			return err
		}
		if uid, err = ensureUID(meta); err != nil {
			return err
		}
		for _, k := range buckets() {
			if _, err := tx.CreateBucketIfNotExists(bucketName(k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return &Backend{db: db, uid: uid}, nil
}

// ensureUID reads the store's identity from the meta bucket, writing a
// new one into a store that has none (a new file, or one from before
// stores had one).
func ensureUID(meta *bbolt.Bucket) (string, error) {
	if v := meta.Get(uidKey); len(v) > 0 {
		return string(v), nil
	}
	uid := string(uuid.NewUUID())
	return uid, meta.Put(uidKey, []byte(uid))
}

// UID is the store's identity, made with the file and kept in it: a copy
// (a snapshot restored) has the same, an empty store made in its place
// another.
func (b *Backend) UID() string { return b.uid }

// checkIntact reads the existing file at path read-only and refuses it if
// it is damaged (cut short, pages overwritten), with an error that names
// the file and says what to do. Opening it for writing would rebuild
// bbolt's freelist by walking every page in a goroutine of bbolt's own,
// where a damaged page panics and kills the process naming no file; bbolt
// offers no option to have that walk return an error instead, so the
// same pages are walked here first (checkFile), where a panic can be
// recovered.
func checkIntact(path string, log *slog.Logger) error {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && st.Size() == 0 {
		return nil // bbolt creates it
	}
	if err != nil {
		return fmt.Errorf("open store %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open store %s: %w", path, err)
	}
	defer f.Close()
	if note := checkMetas(f); note != "" {
		log.Warn("store: "+note, "file", path)
	}
	switch err := checkFile(f, st.Size(), nil); {
	case err == nil:
		return nil
	case errors.Is(err, bbolt.ErrTimeout):
		return fmt.Errorf("open store %s: another process is using it", path)
	default:
		return fmt.Errorf("open store %s: the file is damaged (%w): restore a copy of it (or move it away to start with an empty store), then start berth again", path, err)
	}
}

// checkFile checks that the bolt file f, of size bytes, reads whole and
// opens for writing without bbolt panicking or faulting: its page tree and
// freelist first (checkPages, since a loop there is past recovering),
// then, read-only and guarded, every page and key through bbolt, the keys
// in order, and bbolt's own Check, which finds what the writable open's
// freelist walk would turn into a panic (pages shared, out of bounds).
// then, when not nil, runs in the same read transaction. A server's open
// and a snapshot's verification check alike, so that a snapshot that
// verifies is one a server opens.
func checkFile(f *os.File, size int64, then func(*bbolt.Tx) error) error {
	if err := checkPages(f, size); err != nil {
		return err
	}
	return guard(func() error {
		db, err := bbolt.Open(f.Name(), 0o600, &bbolt.Options{ReadOnly: true, Timeout: lockTimeout})
		if err != nil {
			return err
		}
		defer db.Close()
		return db.View(func(tx *bbolt.Tx) error {
			if tx.Size() > size {
				return fmt.Errorf("truncated: %d bytes, its pages reach %d", size, tx.Size())
			}
			if err := tx.ForEach(func(_ []byte, b *bbolt.Bucket) error { return walkBucket(b) }); err != nil {
				return err
			}
			var first error
			for err := range tx.Check() {
				if first == nil {
					first = err
				}
			}
			if first != nil {
				return first
			}
			if then != nil {
				return then(tx)
			}
			return nil
		})
	})
}

// walkBucket reads every page of b and of the buckets inside it, and
// every key, which must come in order.
func walkBucket(b *bbolt.Bucket) error {
	var prev []byte
	return b.ForEach(func(k, v []byte) error {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("keys out of order after %q", prev)
		}
		prev = k
		if v == nil {
			if nested := b.Bucket(k); nested != nil {
				return walkBucket(nested)
			}
		}
		return nil
	})
}

func bucketName(k *api.Kind) []byte {
	if k.Custom {
		return []byte(customBucketName)
	}
	return []byte(k.GroupResource().String())
}

// customBucketName is the bucket of every custom resource, each under the
// key group/Kind/namespace/name: CRDs come and go, and an object carries
// its apiVersion and kind.
const customBucketName = "custom/objects"

// customBucket stands for customBucketName among the kinds' buckets.
var customBucket = &api.Kind{Custom: true, Resource: "custom objects"}

// buckets are the kinds whose buckets a store file holds.
func buckets() []*api.Kind { return append(slices.Clip(api.Kinds()), customBucket) }

// opKey is the key of an op's object in its bucket.
func opKey(op *store.Op) []byte {
	if op.Kind.Custom {
		return []byte(op.Kind.GVK.Group + "/" + op.Kind.GVK.Kind + "/" + string(objectKey(op.Namespace, op.Name)))
	}
	return objectKey(op.Namespace, op.Name)
}

func objectKey(namespace, name string) []byte {
	if namespace == "" {
		return []byte(name)
	}
	return []byte(namespace + "/" + name)
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// Persistent tells the store to encode objects for this backend.
func (b *Backend) Persistent() bool { return true }

// Load reads every object and the newest revision.
func (b *Backend) Load(fn func(api.Object) error) (uint64, error) {
	var rev uint64
	err := b.db.View(func(tx *bbolt.Tx) error {
		rev = revisionOf(tx)
		return forEachObject(tx, fn)
	})
	return rev, err
}

// Commit writes ops and the revision in one transaction, fsynced before it
// returns.
func (b *Backend) Commit(rev uint64, ops []store.Op) error {
	return b.db.Update(func(tx *bbolt.Tx) error {
		for i := range ops {
			op := &ops[i]
			bk := tx.Bucket(bucketName(op.Kind))
			key := opKey(op)
			if op.Object == nil {
				if err := bk.Delete(key); err != nil {
					return err
				}
				continue
			}
			if op.Data == nil {
				return fmt.Errorf("%s %s: not encoded", op.Kind.Resource, key)
			}
			if err := bk.Put(key, op.Data); err != nil {
				return err
			}
		}
		return tx.Bucket(metaBucket).Put(revisionKey, u64(rev))
	})
}

// Probe writes the revision again, as it is: a commit that changes
// nothing, whose success says the file takes writes again after one
// failed (a full disk). A failed bbolt transaction rolls back whole, so
// the store may go on from its last durable revision.
func (b *Backend) Probe() error {
	return b.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(metaBucket).Put(revisionKey, u64(revisionOf(tx)))
	})
}

// Close closes the file.
func (b *Backend) Close() error { return b.db.Close() }

// Size is the size of the store file in bytes, free pages included, as
// etcd reports its database size: it grows with what the store holds and
// with its history of writes, and an operator watches it for the disk.
func (b *Backend) Size() (int64, error) {
	var n int64
	err := b.db.View(func(tx *bbolt.Tx) error {
		n = tx.Size()
		return nil
	})
	return n, err
}

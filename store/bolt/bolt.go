package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var (
	metaBucket  = []byte("meta")
	revisionKey = []byte("revision")
	formatKey   = []byte("format")
)

// format is the layout version written into the file.
const format = 1

// Backend keeps the store in one bbolt file.
type Backend struct {
	db *bbolt.DB
}

var _ store.Backend = (*Backend)(nil)

// Open opens or creates the store file at path. It fails at once if
// another process holds the file.
func Open(path string) (*Backend, error) {
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
		for _, k := range api.Kinds() {
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
	return &Backend{db: db}, nil
}

func bucketName(k *api.Kind) []byte { return []byte(k.GroupResource().String()) }

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
		if v := tx.Bucket(metaBucket).Get(revisionKey); v != nil {
			rev = binary.BigEndian.Uint64(v)
		}
		for _, k := range api.Kinds() {
			bk := tx.Bucket(bucketName(k))
			err := bk.ForEach(func(key, data []byte) error {
				obj := k.New()
				if err := json.Unmarshal(data, obj); err != nil {
					return fmt.Errorf("decode %s %s: %w", k.Resource, key, err)
				}
				return fn(obj)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return rev, err
}

// Commit writes ops and the revision in one transaction, fsynced before it
// returns.
func (b *Backend) Commit(rev uint64, ops []store.Op) error {
	return b.db.Update(func(tx *bbolt.Tx) error {
		for _, op := range ops {
			bk := tx.Bucket(bucketName(op.Kind))
			key := objectKey(op.Namespace, op.Name)
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

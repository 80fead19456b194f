package git

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// headRef is where the cache keeps the commit the source last fetched.
const headRef = plumbing.ReferenceName("refs/berth/head")

// objectCacheSize bounds go-git's cache of decoded objects: reading a
// revision visits each blob once, so a big cache only holds memory.
const objectCacheSize = 16 * cache.MiByte

// maxPacks is how many packfiles the cache may gather (one per fetch)
// before it is made afresh at the next fetch: go-git does not repack, and
// every lookup searches every pack.
const maxPacks = 64

// repoCache is the bare repository a source keeps in its cache folder.
type repoCache struct {
	dir  string
	st   *filesystem.Storage
	repo *gogit.Repository
}

// openCache opens the bare repository in dir, making it when dir is empty
// or missing, and making it afresh when dir holds a broken one. It refuses
// a folder that holds anything else.
func openCache(dir string) (*repoCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("git cache %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("git cache %s: %w", dir, err)
	}
	if len(entries) > 0 && !looksLikeRepo(dir) {
		return nil, fmt.Errorf("git cache %s holds something other than a git repository; refusing to use it", dir)
	}
	c := &repoCache{dir: dir}
	if err := c.open(); err != nil {
		if err := c.reset(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func looksLikeRepo(dir string) bool {
	_, errHead := os.Stat(filepath.Join(dir, "HEAD"))
	fi, errObjects := os.Stat(filepath.Join(dir, "objects"))
	return errHead == nil || (errObjects == nil && fi.IsDir())
}

func (c *repoCache) open() error {
	c.st = filesystem.NewStorageWithOptions(osfs.New(c.dir), cache.NewObjectLRU(objectCacheSize), filesystem.Options{KeepDescriptors: true})
	repo, err := gogit.Open(c.st, nil)
	if errors.Is(err, gogit.ErrRepositoryNotExists) {
		repo, err = gogit.Init(c.st, nil)
	}
	if err != nil {
		_ = c.st.Close()
		c.st = nil
		return fmt.Errorf("git cache %s: %w", c.dir, err)
	}
	c.repo = repo
	return nil
}

// reset empties the cache and makes a new repository in it.
func (c *repoCache) reset() error {
	c.close()
	if !looksLikeRepo(c.dir) {
		if entries, _ := os.ReadDir(c.dir); len(entries) > 0 {
			return fmt.Errorf("git cache %s holds something other than a git repository; refusing to empty it", c.dir)
		}
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("git cache %s: %w", c.dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(c.dir, e.Name())); err != nil {
			return fmt.Errorf("empty git cache %s: %w", c.dir, err)
		}
	}
	return c.open()
}

func (c *repoCache) close() {
	if c.st != nil {
		_ = c.st.Close()
		c.st, c.repo = nil, nil
	}
}

// hasCommit reports whether the commit and its tree are in the cache, so
// that it can be read without a fetch.
func (c *repoCache) hasCommit(h plumbing.Hash) bool {
	commit, err := c.repo.CommitObject(h)
	if err != nil {
		return false
	}
	_, err = commit.Tree()
	return err == nil
}

// hasHead reports whether the cache holds a commit fetched before, which
// later fetches can build on.
func (c *repoCache) hasHead() bool {
	ref, err := c.repo.Reference(headRef, true)
	return err == nil && c.hasCommit(ref.Hash())
}

// shallow reports whether the cache holds shallow history.
func (c *repoCache) shallow() bool {
	s, err := c.st.Shallow()
	return err != nil || len(s) > 0
}

// packs counts the cache's packfiles.
func (c *repoCache) packs() int {
	m, _ := filepath.Glob(filepath.Join(c.dir, "objects", "pack", "*.pack"))
	return len(m)
}

// setHead records the commit the source now reads.
func (c *repoCache) setHead(h plumbing.Hash) error {
	return c.st.SetReference(plumbing.NewHashReference(headRef, h))
}

// peel follows annotated tags from h to the commit they name.
func (c *repoCache) peel(h plumbing.Hash) (plumbing.Hash, error) {
	for range 10 {
		obj, err := c.st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if obj.Type() != plumbing.TagObject {
			if obj.Type() != plumbing.CommitObject {
				return plumbing.ZeroHash, fmt.Errorf("%s is a %s, not a commit", h, obj.Type())
			}
			return h, nil
		}
		tag, err := object.DecodeTag(c.st, obj)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		h = tag.Target
	}
	return plumbing.ZeroHash, fmt.Errorf("%s: tags nested too deep", h)
}

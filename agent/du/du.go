package du

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Usage is what Walk measured.
type Usage struct {
	// Bytes is the space the tree takes on disk: the blocks of its files
	// and directories, each inode counted once.
	Bytes int64
	// Entries is how many files and directories were looked at.
	Entries int
	// Partial says the walk stopped at its budget: Bytes is then a lower
	// bound, so a tree over a limit is known to be over it, never the
	// other way round.
	Partial bool
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.Bytes += v.Bytes
	u.Entries += v.Entries
	u.Partial = u.Partial || v.Partial
}

// Walk measures the tree at dir, visiting at most budget entries (none:
// budget <= 0). It follows no symbolic link and stays on dir's file
// system, so a volume mounted below dir (a tmpfs) is not counted. A dir
// that does not exist takes nothing; files that go away while it walks
// are skipped, as the tree may be written to meanwhile.
func Walk(dir string, budget int) (Usage, error) {
	var u Usage
	root, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return u, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	dev, _ := device(root)
	seen := map[inode]bool{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if budget > 0 && u.Entries >= budget {
			u.Partial = true
			return filepath.SkipAll
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		u.Entries++
		if d, ok := device(info); ok && d != dev {
			return filepath.SkipDir // another file system mounted here
		}
		if id, linked := inodeOf(info); linked {
			if seen[id] {
				return nil
			}
			seen[id] = true
		}
		u.Bytes += onDisk(info)
		return nil
	})
	if err != nil {
		return u, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return u, nil
}

package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source/build"
)

// ReadDirOptions says how much of a directory is a source's.
type ReadDirOptions struct {
	// Flat reads only the files directly in the directory, as the agent's
	// --manifest-dir does (SPEC §2); the zero value walks every folder
	// below it, as a --source path does (SPEC §3).
	Flat bool
	// Cache, when set, spares reading a file that has not changed since
	// the last ReadDir with the same cache, when Have says the receiver
	// still holds its content: such a File has its Sum and no Data. Every
	// File ReadDir returns then has its Sum (ContentSum of its
	// content), read or not.
	Cache *ReadCache
	// Have reports whether the receiver holds the content of name whose
	// digest is sum (a source.Decoder's Has); used with Cache.
	Have func(name, sum string) bool
}

// ReadCache is what ReadDir remembers of the files it read, so that a
// relist of an unchanged tree stats each file but reads none. A file
// counts as unchanged when its device, inode, size, modification and
// change times are as they were when it was read, and that read came more
// than racyWindow after its last change: a write in the same tick of the
// filesystem's clock leaves the times as they were (git's "racy" files),
// so such a file is read again next time. The change time cannot be set
// by a user, so a file rewritten with its old size and modification time
// is still seen. A ReadCache is for one goroutine at a time.
type ReadCache struct {
	files map[string]cachedFile
}

// racyWindow is how recently a file may have changed for its times not to
// be trusted: coarser than any filesystem's timestamps (FAT's are 2 s). A
// variable for tests only.
var racyWindow = 2 * time.Second

type cachedFile struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns
	sum          string
	racy         bool
}

func statOf(fi fs.FileInfo) (cachedFile, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return cachedFile{}, false
	}
	return cachedFile{
		dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(),
		mtime: fi.ModTime().UnixNano(), ctime: ctime(st),
	}, true
}

func (c cachedFile) sameFile(o cachedFile) bool {
	return c.dev == o.dev && c.ino == o.ino && c.size == o.size && c.mtime == o.mtime && c.ctime == o.ctime
}

// ReadDir reads the manifests at root: when root is a directory, every
// *.yaml, *.yml and *.json file below it (or in it, when Flat), dot files
// and dot folders skipped, symbolic links followed but never twice to the
// same file or folder, so that a loop ends, and only to what lies inside
// root (a link out of it is skipped, and listed in Contents.Skipped), as a
// git source follows none; when root is a file, that file
// whatever its name. Files are named by their slash path relative to root
// (a single file by its base name). A file over MaxFileSize, or one that
// cannot be read, is a problem naming it; the rest is still read. The
// error is only for a root that cannot be read at all.
//
// It also returns the directories it walked (root first), the folders a
// watcher needs to watch; none when root is a file.
func ReadDir(root string, opts ReadDirOptions) (Contents, []string, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return Contents{}, nil, fmt.Errorf("read %s: %w", root, unwrapPath(err))
	}
	w := &walker{root: root, flat: opts.Flat, seen: map[fileID]bool{}, have: opts.Have}
	if opts.Cache != nil {
		// Sized for a tree like the last one: relists of a big tree are
		// the common case.
		w.cached, w.cache = opts.Cache.files, make(map[string]cachedFile, len(opts.Cache.files))
		w.contents.Files = make([]File, 0, len(opts.Cache.files))
		// What this read finds replaces what the last one found: files
		// gone are forgotten. A root that cannot be read keeps the cache.
		defer func() {
			if w.cache != nil {
				opts.Cache.files = w.cache
			}
		}()
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return Contents{}, nil, fmt.Errorf("read %s: not a directory or a regular file", root)
		}
		w.file(root, filepath.Base(root), fi)
		return w.contents, nil, nil
	}
	w.seen[idOf(root, fi)] = true
	if !opts.Flat && buildKindAt(root) != build.Plain {
		// A tree to build: every file counts (a generator's .env, a
		// chart's templates), each read afresh for the build.
		w.all, w.cache = true, nil
		w.contents.BuildDir = "."
	}
	if w.real, err = filepath.EvalSymlinks(root); err != nil {
		w.real = filepath.Clean(root)
	}
	if err := w.dir(root, ""); err != nil {
		w.cache = nil
		return Contents{}, nil, fmt.Errorf("read %s: %w", root, unwrapPath(err))
	}
	// Links last, so that what is reachable without them keeps its own
	// name, whatever the names sort as.
	for len(w.links) > 0 {
		l := w.links[0]
		w.links = w.links[1:]
		target, err := filepath.EvalSymlinks(l.path)
		if err != nil {
			continue // a dangling link names nothing to read
		}
		if !within(w.real, target) {
			w.contents.Skipped = append(w.contents.Skipped, SkippedLink{Name: l.rel, Target: target})
			continue
		}
		w.entry(l.path, l.rel, true)
	}
	return w.contents, w.dirs, nil
}

// IsManifest reports whether a file name is one a directory contributes:
// *.yaml, *.yml or *.json, not a dot file.
func IsManifest(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// buildKindAt says what a directory asks to be built as, from the files
// it holds; Plain for a file or a folder that cannot be read.
func buildKindAt(dir string) build.Kind {
	return build.KindOf(func(name string) bool {
		fi, err := os.Stat(filepath.Join(dir, name))
		return err == nil && fi.Mode().IsRegular()
	})
}

// walker collects the manifest files below a directory.
type walker struct {
	root string
	// all reads every file, not only manifests, dot files included but
	// not dot folders: the tree of a build.
	all bool
	// real is root with its links resolved: what links must stay inside.
	real     string
	flat     bool
	seen     map[fileID]bool
	contents Contents
	dirs     []string
	links    []link // symbolic links met, followed after the rest
	// With a ReadCache: what the last read found (cached), what this one
	// finds (cache), and whether the receiver holds a content.
	cached, cache map[string]cachedFile
	have          func(name, sum string) bool
}

type link struct{ path, rel string }

// SkippedLink is a symbolic link a directory source did not follow: it
// leads out of the source's root.
type SkippedLink struct {
	// Name is the link's slash path relative to the root; Target where it
	// leads, resolved.
	Name, Target string
}

func (l SkippedLink) String() string { return l.Name + " -> " + l.Target }

// within reports whether path, resolved, lies in or under dir, resolved.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// fileID identifies a file or folder whatever path reaches it.
type fileID struct {
	dev, ino uint64
	path     string // where the system gives no inode
}

func idOf(p string, fi fs.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: st.Ino}
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return fileID{path: p}
}

// dir reads one folder; the error is for the folder itself.
func (w *walker) dir(p, rel string) error {
	w.dirs = append(w.dirs, p)
	entries, err := os.ReadDir(p) // sorted by name
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case w.all && strings.HasPrefix(name, ".") && e.IsDir():
			continue
		case w.all:
		case strings.HasPrefix(name, "."):
			continue
		case w.flat && e.IsDir():
			continue
		case e.Type().IsRegular() && !IsManifest(name):
			continue // most files of a big tree: no stat needed
		}
		child := filepath.Join(p, name)
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		if e.Type()&fs.ModeSymlink != 0 {
			w.links = append(w.links, link{child, childRel})
			continue
		}
		w.entry(child, childRel, false)
	}
	return nil
}

// entry reads a file or folder found in a folder, once.
func (w *walker) entry(p, rel string, isLink bool) {
	fi, err := os.Stat(p) // follows links
	if err != nil {
		if !isLink {
			w.problem(rel, err)
		}
		return // a dangling link names nothing to read
	}
	switch {
	case fi.IsDir() && !w.flat:
		id := idOf(p, fi)
		if w.seen[id] {
			return
		}
		w.seen[id] = true
		if err := w.dir(p, rel); err != nil {
			w.problem(rel, err)
		}
	case fi.Mode().IsRegular() && (w.all || IsManifest(filepath.Base(p))):
		id := idOf(p, fi)
		if w.seen[id] {
			return
		}
		w.seen[id] = true
		w.file(p, rel, fi)
	}
}

// file reads one manifest file, refusing it when it is too big, or takes
// it from the cache when it has not changed and the receiver holds it.
func (w *walker) file(p, rel string, fi fs.FileInfo) {
	if fi.Size() > MaxFileSize {
		if w.all && !IsManifest(filepath.Base(p)) {
			return // a big file beside a build's inputs: not one of them
		}
		w.contents.Problems = append(w.contents.Problems, TooBig(rel, fi.Size()))
		return
	}
	st, statOK := statOf(fi)
	if w.cache != nil && statOK {
		if c, ok := w.cached[rel]; ok && !c.racy && c.sameFile(st) && w.have != nil && w.have(rel, c.sum) {
			w.cache[rel] = c
			w.contents.Files = append(w.contents.Files, File{Name: rel, Sum: c.sum})
			return
		}
	}
	readAt := time.Now() // compared with the filesystem's times, which are the wall clock's
	data, err := readCapped(p)
	if err != nil {
		w.problem(rel, err)
		return
	}
	if len(data) > MaxFileSize {
		w.contents.Problems = append(w.contents.Problems, TooBig(rel, -1)) // it grew while read
		return
	}
	f := File{Name: rel, Data: data}
	if w.cache != nil {
		f.Sum = ContentSum(data)
		if statOK {
			st.sum = f.Sum
			st.racy = max(st.mtime, st.ctime) > readAt.Add(-racyWindow).UnixNano()
			w.cache[rel] = st
		}
	}
	w.contents.Files = append(w.contents.Files, f)
}

func (w *walker) problem(rel string, err error) {
	w.contents.Problems = append(w.contents.Problems, &api.Error{File: rel, Doc: -1, Message: "cannot read: " + unwrapPath(err).Error()})
}

// readCapped reads at most one byte more than MaxFileSize, so that a file
// that grew after it was measured is still refused without being read
// whole.
func readCapped(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// TooBig is the problem of a file (or body) over MaxFileSize; size is
// negative when unknown.
func TooBig(name string, size int64) *api.Error {
	msg := "refused: larger than the 10 MiB limit"
	if size >= 0 {
		msg = fmt.Sprintf("refused: %d bytes, larger than the 10 MiB limit", size)
	}
	return &api.Error{File: name, Doc: -1, Message: msg}
}

// unwrapPath drops the path a *fs.PathError repeats, for messages that
// already name the file.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

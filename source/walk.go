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

	"github.com/berth-dev/berth/api"
)

// ReadDirOptions says how much of a directory is a source's.
type ReadDirOptions struct {
	// Flat reads only the files directly in the directory, as the agent's
	// --manifest-dir does (SPEC §2); the zero value walks every folder
	// below it, as a --source path does (SPEC §3).
	Flat bool
}

// ReadDir reads the manifests at root: when root is a directory, every
// *.yaml, *.yml and *.json file below it (or in it, when Flat), dot files
// and dot folders skipped, symbolic links followed but never twice to the
// same file or folder, so that a loop ends; when root is a file, that file
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
	w := &walker{root: root, flat: opts.Flat, seen: map[fileID]bool{}}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return Contents{}, nil, fmt.Errorf("read %s: not a directory or a regular file", root)
		}
		w.file(root, filepath.Base(root), fi)
		return w.contents, nil, nil
	}
	w.seen[idOf(root, fi)] = true
	if err := w.dir(root, ""); err != nil {
		return Contents{}, nil, fmt.Errorf("read %s: %w", root, unwrapPath(err))
	}
	// Links last, so that what is reachable without them keeps its own
	// name, whatever the names sort as.
	for len(w.links) > 0 {
		l := w.links[0]
		w.links = w.links[1:]
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

// walker collects the manifest files below a directory.
type walker struct {
	root     string
	flat     bool
	seen     map[fileID]bool
	contents Contents
	dirs     []string
	links    []link // symbolic links met, followed after the rest
}

type link struct{ path, rel string }

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
	case fi.Mode().IsRegular() && IsManifest(filepath.Base(p)):
		id := idOf(p, fi)
		if w.seen[id] {
			return
		}
		w.seen[id] = true
		w.file(p, rel, fi)
	}
}

// file reads one manifest file, refusing it when it is too big.
func (w *walker) file(p, rel string, fi fs.FileInfo) {
	if fi.Size() > MaxFileSize {
		w.contents.Problems = append(w.contents.Problems, TooBig(rel, fi.Size()))
		return
	}
	data, err := readCapped(p)
	if err != nil {
		w.problem(rel, err)
		return
	}
	if len(data) > MaxFileSize {
		w.contents.Problems = append(w.contents.Problems, TooBig(rel, -1)) // it grew while read
		return
	}
	w.contents.Files = append(w.contents.Files, File{Name: rel, Data: data})
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

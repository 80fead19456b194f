package git

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/source/build"
)

// readTree reads the manifests of a commit from its tree, below dir (""
// for the root), straight from the object store: no worktree to check out
// or to corrupt. Files are named by their path in the repository. A dir
// that the commit lacks is a problem of the revision (it would otherwise
// read as "no objects" and prune everything); the error is for a store
// that cannot be read.
//
// Blobs that have (by name and hash) are left unread: their File has a
// Sum and no Data. have may be nil.
func readTree(s storer.EncodedObjectStorer, commit plumbing.Hash, dir string, have func(name, sum string) bool) (source.Contents, error) {
	c, err := object.GetCommit(s, commit)
	if err != nil {
		return source.Contents{}, fmt.Errorf("read commit %s: %w", commit, err)
	}
	tree, err := object.GetTree(s, c.TreeHash)
	if err != nil {
		return source.Contents{}, fmt.Errorf("read the tree of commit %s: %w", commit, err)
	}
	if dir != "" {
		entry, err := tree.FindEntry(dir)
		if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) || err == nil && entry.Mode != filemode.Dir {
			return source.Contents{Problems: api.ErrorList{{File: dir, Doc: -1, Message: fmt.Sprintf("path= names no folder in commit %s", commit)}}}, nil
		}
		if err != nil {
			return source.Contents{}, fmt.Errorf("read %s in commit %s: %w", dir, commit, err)
		}
		if tree, err = object.GetTree(s, entry.Hash); err != nil {
			return source.Contents{}, fmt.Errorf("read %s in commit %s: %w", dir, commit, err)
		}
	}
	if buildKindOf(tree) != build.Plain {
		// A tree to build: every file of the commit, from its root, since
		// an overlay's bases and a chart's values may lie outside dir.
		root, err := object.GetTree(s, c.TreeHash)
		if err != nil {
			return source.Contents{}, fmt.Errorf("read the tree of commit %s: %w", commit, err)
		}
		r := &treeReader{s: s, all: true}
		if err := r.walk(root, ""); err != nil {
			return source.Contents{}, fmt.Errorf("read commit %s: %w", commit, err)
		}
		r.contents.BuildDir = dir
		if dir == "" {
			r.contents.BuildDir = "."
		}
		return r.contents, nil
	}
	r := &treeReader{s: s, have: have}
	if err := r.walk(tree, dir); err != nil {
		return source.Contents{}, fmt.Errorf("read commit %s: %w", commit, err)
	}
	return r.contents, nil
}

// buildKindOf says what a folder of a commit asks to be built as.
func buildKindOf(tree *object.Tree) build.Kind {
	return build.KindOf(func(name string) bool {
		e, err := tree.FindEntry(name)
		return err == nil && e.Mode.IsFile()
	})
}

type treeReader struct {
	s storer.EncodedObjectStorer
	// all reads every file, not only manifests, dot files included but
	// not dot folders: the tree of a build.
	all      bool
	have     func(name, sum string) bool
	contents source.Contents
}

// walk reads the manifest files of a tree: *.yaml, *.yml and *.json, dot
// files and dot folders skipped, as a dir source reads a folder. Symbolic
// links and submodules are not followed.
func (r *treeReader) walk(tree *object.Tree, prefix string) error {
	for _, e := range tree.Entries {
		if strings.HasPrefix(e.Name, ".") && (!r.all || e.Mode == filemode.Dir) {
			continue
		}
		name := e.Name
		if prefix != "" {
			name = prefix + "/" + e.Name
		}
		switch e.Mode {
		case filemode.Dir:
			sub, err := object.GetTree(r.s, e.Hash)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := r.walk(sub, name); err != nil {
				return err
			}
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
			if !r.all && !source.IsManifest(e.Name) {
				continue
			}
			if err := r.blob(name, e.Hash); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *treeReader) blob(name string, h plumbing.Hash) error {
	if r.have != nil && r.have(name, h.String()) {
		r.contents.Files = append(r.contents.Files, source.File{Name: name, Sum: h.String()})
		return nil
	}
	obj, err := r.s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if obj.Size() > source.MaxFileSize {
		if r.all && !source.IsManifest(name) {
			return nil // a big file beside a build's inputs: not one of them
		}
		r.contents.Problems = append(r.contents.Problems, source.TooBig(name, obj.Size()))
		return nil
	}
	rd, err := obj.Reader()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer rd.Close()
	data := make([]byte, obj.Size())
	if _, err := io.ReadFull(rd, data); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	r.contents.Files = append(r.contents.Files, source.File{Name: name, Data: data, Sum: h.String()})
	return nil
}

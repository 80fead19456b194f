package source

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/berth-dev/berth/api"
)

// File is one manifest file of a revision, named by its slash-separated
// path relative to the source's root (the repository root for git).
type File struct {
	Name string
	Data []byte
	// Sum identifies Data when the place already has a digest of it (a git
	// blob's hash), so a Decoder need not compute one; "" otherwise.
	Sum string
}

// ContentSum is the Sum of a file's content where the place has none of
// its own: the hex SHA-256 of data.
func ContentSum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// Contents is what a source read at one moment: its manifest files and the
// files it could not read (too big, unreadable), each as an error with
// Doc -1 naming the file.
type Contents struct {
	Files    []File
	Problems api.ErrorList
	// Skipped are the symbolic links a directory source did not follow,
	// for leading out of it: a warning, not a problem.
	Skipped []SkippedLink
	// BuildDir, when set, says Files are a tree to build rather than
	// manifests: every file of the repository (or directory), whatever its
	// name, and this the slash path of the folder to build, "." for the
	// root (see package build). The Decoder builds it before decoding.
	BuildDir string
}

// ContentHash is the ID of a dir or http revision: "sha256:<hex>" over the
// files' names and contents in name order, and over the problems, so that
// the same files give the same ID wherever and whenever they are read. A
// file that carries its Sum counts by it (its content may be left out): a
// reader gives every file its Sum or none.
func (c Contents) ContentHash() string {
	files := sortedFiles(c.Files)
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, f := range files {
		field([]byte(f.Name))
		if f.Sum != "" {
			field([]byte(f.Sum)) // its content, by digest: Data may be left out
		} else {
			field(f.Data)
		}
	}
	for _, p := range c.Problems {
		field([]byte(p.Error()))
	}
	if c.BuildDir != "" {
		field([]byte("build:" + c.BuildDir))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// sortedFiles returns files in name order, without copying when they
// already are.
func sortedFiles(files []File) []File {
	cmp := func(a, b File) int { return strings.Compare(a.Name, b.Name) }
	if slices.IsSortedFunc(files, cmp) {
		return files
	}
	files = slices.Clone(files)
	slices.SortFunc(files, cmp)
	return files
}

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/api"
)

// stdinName is how errors name manifests read from standard input.
const stdinName = "<stdin>"

// manifestExtensions are the files a directory contributes (SPEC §3).
var manifestExtensions = []string{".yaml", ".yml", ".json"}

// manifestFile is one file named by -f, read.
type manifestFile struct {
	name string
	data []byte
}

// readManifests reads what -f names, as `validate`, `apply`, `diff` and
// `delete -f` take it: "-" for standard input, a file whatever its name,
// or a directory walked recursively for *.yaml, *.yml and *.json, dot files
// and dot folders skipped, symbolic links followed but never twice. A path
// that does not exist is bad usage; a file or directory that cannot be
// read is reported in problems and the rest is still read.
func readManifests(paths []string, stdin io.Reader) (files []manifestFile, problems api.ErrorList, err error) {
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, nil, failed(fmt.Errorf("read standard input: %w", err))
			}
			files = append(files, manifestFile{name: stdinName, data: data})
			continue
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, usageErrorf("the path %q does not exist", p)
		}
		if err != nil {
			problems = append(problems, fileProblem(p, err))
			continue
		}
		w := &walker{seen: seen}
		if fi.IsDir() {
			w.dir(p)
		} else {
			w.file(p)
		}
		files = append(files, w.files...)
		problems = append(problems, w.problems...)
	}
	return files, problems, nil
}

// walker collects the manifest files below a directory.
type walker struct {
	seen     map[string]bool // real paths of directories and files already read
	files    []manifestFile
	problems api.ErrorList
}

// once reports whether a path is new, by its real path, so that symbolic
// links neither loop nor read a file twice.
func (w *walker) once(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		real = p
	}
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	if w.seen[real] {
		return false
	}
	w.seen[real] = true
	return true
}

func (w *walker) dir(dir string) {
	if !w.once(dir) {
		return
	}
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		w.problems = append(w.problems, fileProblem(dir, err))
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 {
			fi, err := os.Stat(p)
			if err != nil {
				continue // a dangling link names nothing to read
			}
			mode = fi.Mode().Type()
		}
		switch {
		case mode.IsDir():
			w.dir(p)
		case mode.IsRegular() && hasManifestExtension(p):
			w.file(p)
		}
	}
}

func (w *walker) file(p string) {
	if !w.once(p) {
		return
	}
	data, err := os.ReadFile(p)
	if err != nil {
		w.problems = append(w.problems, fileProblem(p, err))
		return
	}
	w.files = append(w.files, manifestFile{name: p, data: data})
}

func hasManifestExtension(p string) bool {
	ext := filepath.Ext(p)
	for _, e := range manifestExtensions {
		if ext == e {
			return true
		}
	}
	return false
}

// fileProblem reports a file or directory that could not be read.
func fileProblem(p string, err error) *api.Error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &api.Error{File: p, Doc: -1, Message: "cannot read: " + err.Error()}
}

// decodeManifests decodes every object of the files and, with validate,
// defaults and validates each as a source does with a revision (custom
// resources against the CRDs among the files, or those the server
// serves), and reports duplicates. prepare, when set, sees each object
// before it is defaulted (apply puts objects without a namespace in -n's)
// and may report errors about it. learn, called at most once and only
// when a custom resource's CRD is not among the files, makes the server's
// custom kinds known.
func decodeManifests(files []manifestFile, validate bool, prepare func(manifest) api.ErrorList, learn func()) ([]manifest, api.ErrorList) {
	var decoded []*api.Decoded
	var errs api.ErrorList
	for _, f := range files {
		objs, derrs := api.DecodeStream(f.name, f.data, api.DecodeOptions{DropStatus: true, ValidateRest: validate, Kinds: api.UncheckedCustomKind})
		errs = append(errs, derrs...)
		decoded = append(decoded, objs...)
	}
	kinds := manifestKindsOf(decoded, learn)
	out := make([]manifest, 0, len(decoded))
	for _, d := range decoded {
		m := manifest{Decoded: d, kind: kinds.of(d)}
		if m.kind == nil {
			errs = append(errs, noCustomKind(d))
			continue
		}
		if prepare != nil {
			errs = append(errs, prepare(m)...)
		}
		out = append(out, m)
	}
	if validate {
		verrs, unchecked := validateObjects(decoded)
		errs = append(errs, verrs...)
		for _, u := range unchecked {
			errs = append(errs, checkServed(u)...)
		}
		errs = append(errs, api.Duplicates(decoded)...)
	}
	errs.Sort()
	return out, errs
}

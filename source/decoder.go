package source

import (
	"cmp"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source/build"
)

// Decode decodes every file (status dropped) and reports, besides the
// decoder's errors and the read problems, every object defined twice
// across the files. Objects come in file-name order, then document order;
// errors are sorted. The objects are not defaulted.
func (c Contents) Decode() ([]*api.Decoded, api.ErrorList) {
	d := Decoder{once: true}
	return d.Decode(c)
}

// Revision decodes the contents into a revision with the given ID.
func (c Contents) Revision(id string) Revision {
	d := Decoder{once: true}
	return d.Revision(c, id)
}

// Decoder decodes the successive revisions of one source, decoding again
// only the files whose content changed: a commit that changes one file of
// ten thousand costs one decode, and every other file gives back the very
// same *api.Decoded it gave last time, so that a receiver can tell an
// unchanged object by identity alone. Dir, git and http sources all decode
// through it, so a manifest means the same wherever it is kept.
//
// The objects it returns are shared with its cache and with every
// receiver of the revisions: they are read-only, and a receiver copies one
// before changing it (defaulting included). A Decoder is used by one
// goroutine at a time; its zero value is ready.
type Decoder struct {
	// Build says how a tree that asks for a build (Contents.BuildDir) is
	// built, and holds the age key that opens files encrypted with SOPS.
	// Set it before the first Decode; NewDecoder fills it from a Spec.
	Build build.Options
	// KeyFile and ValuesFile, when set, name files read at each Decode
	// into Build.AgeKey and, after Build.Helm.Values, into the chart's
	// values (the decryption-key-file= and helm-values-file= options),
	// so that a rotated key or edited values take effect without a
	// restart. Their content is never logged nor kept elsewhere.
	KeyFile, ValuesFile string

	files map[fileKey]decodedFile // the last revision's files
	chart *Chart                  // the chart the last Decode rendered
	once  bool                    // keep nothing, so copy nothing
}

type fileKey struct{ name, sum string }

// decodedFile is what one file decoded to.
type decodedFile struct {
	objs []*api.Decoded
	errs api.ErrorList
	// locked says the file could not be decrypted: not kept, so that a
	// key that changes is tried on it next time.
	locked bool
}

// Has reports whether the last Decode held the file name with content
// sum, so that a source can leave that file's Data out (nil, with Sum
// set) and save reading it: a git source reads only the blobs that
// changed.
func (d *Decoder) Has(name, sum string) bool {
	_, ok := d.files[fileKey{name, sum}]
	return ok
}

// Revision decodes contents into a revision with the given ID.
func (d *Decoder) Revision(c Contents, id string) Revision {
	d.chart = nil
	objs, errs := d.Decode(c)
	return Revision{ID: id, Objects: objs, Errors: errs, Chart: d.chart}
}

// NewDecoder is the Decoder of a source: its build options from the
// spec's Build and options, a chart rendered as the release named after
// the source unless they say otherwise.
func NewDecoder(spec Spec) Decoder {
	opts := spec.Build
	opts.Helm.ReleaseName = cmp.Or(spec.Options[OptionHelmRelease], opts.Helm.ReleaseName, spec.Name)
	opts.Helm.Namespace = cmp.Or(spec.Options[OptionHelmNamespace], opts.Helm.Namespace)
	return Decoder{
		Build:      opts,
		KeyFile:    spec.Options[OptionDecryptionKeyFile],
		ValuesFile: spec.Options[OptionHelmValuesFile],
	}
}

// options are the build options of one Decode, with the key and values
// files read; the errors name the file that could not be read.
func (d *Decoder) options() (build.Options, api.ErrorList) {
	opts := d.Build
	var errs api.ErrorList
	read := func(p string) []byte {
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, &api.Error{File: p, Doc: -1, Message: "cannot read: " + unwrapPath(err).Error()})
		}
		return data
	}
	if d.KeyFile != "" {
		opts.AgeKey = append(append(slices.Clip(opts.AgeKey), '\n'), read(d.KeyFile)...)
	}
	if d.ValuesFile != "" {
		opts.Helm.Values = append(slices.Clip(opts.Helm.Values), build.File{Name: d.ValuesFile, Data: read(d.ValuesFile)})
	}
	return opts, errs
}

// Decode is Contents.Decode, reusing what the previous call decoded. A
// tree to build is built first (package build), and what the build
// produced is decoded as the files of the revision; a manifest encrypted
// with SOPS is opened in memory before it is decoded.
func (d *Decoder) Decode(c Contents) ([]*api.Decoded, api.ErrorList) {
	opts, problems := d.options()
	if len(problems) > 0 {
		problems = append(problems, c.Problems...)
		problems.Sort()
		return nil, problems
	}
	if c.BuildDir != "" {
		tree := build.Tree{Files: make([]build.File, len(c.Files)), Dir: c.BuildDir}
		for i, f := range c.Files {
			tree.Files[i] = build.File{Name: f.Name, Data: f.Data}
		}
		built, errs := build.Build(tree, opts)
		if len(errs) > 0 {
			errs = append(errs, c.Problems...)
			errs.Sort()
			return nil, errs
		}
		c = Contents{Files: make([]File, len(built)), Problems: c.Problems}
		for i, f := range built {
			c.Files[i] = File{Name: f.Name, Data: f.Data}
		}
		d.chart = chartOf(tree, built)
	}
	files := sortedFiles(c.Files)
	keys := make([]fileKey, len(files))
	results := make([]decodedFile, len(files))
	var todo []int
	for i, f := range files {
		if d.once {
			todo = append(todo, i)
			continue
		}
		sum := f.Sum
		if sum == "" {
			sum = ContentSum(f.Data)
		}
		keys[i] = fileKey{f.Name, sum}
		kept, ok := d.files[keys[i]]
		switch {
		case ok:
			results[i] = kept
		case f.Data == nil && f.Sum != "":
			// Left out for a Has that no longer holds: a caller's bug,
			// reported rather than read as an empty file.
			results[i] = decodedFile{errs: api.ErrorList{{File: f.Name, Doc: -1, Message: "internal error: the content was left out but is not at hand"}}}
		default:
			todo = append(todo, i)
		}
	}
	parallel(len(todo), func(k int) {
		i := todo[k]
		data := files[i].Data
		if build.Encrypted(files[i].Name, data) {
			plain, err := build.Decrypt(files[i].Name, data, opts.AgeKey)
			if err != nil {
				results[i] = decodedFile{errs: api.ErrorList{err}, locked: true}
				return
			}
			data = plain
		}
		objs, errs := api.DecodeStream(files[i].Name, data, api.DecodeOptions{DropStatus: true, ValidateRest: true, Kinds: api.UncheckedCustomKind})
		results[i] = decodedFile{objs: objs, errs: errs}
	})

	starts := make([]int, len(results))
	n := 0
	for i, r := range results {
		starts[i] = n
		n += len(r.objs)
	}
	objs := make([]*api.Decoded, n)
	errs := slices.Clone(c.Problems)
	if d.once {
		for i, r := range results {
			copy(objs[starts[i]:], r.objs)
			errs = append(errs, r.errs...)
		}
	} else {
		kept := make(map[fileKey]decodedFile, len(files))
		for i, r := range results {
			if !r.locked {
				kept[keys[i]] = r
			}
			copy(objs[starts[i]:], r.objs)
		}
		d.files = kept
		for _, r := range results {
			for _, e := range r.errs {
				ec := *e
				errs = append(errs, &ec)
			}
		}
	}
	errs = append(errs, api.DuplicatesAsDefaulted(objs)...)
	errs.Sort()
	return objs, errs
}

// parallel calls f(0) … f(n-1) on as many goroutines as there are
// processors, and returns when every call has.
func parallel(n int, f func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

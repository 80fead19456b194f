package source

import (
	"runtime"
	"slices"
	"sync"

	"github.com/berth-dev/berth/api"
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
	files map[fileKey]decodedFile // the last revision's files
	once  bool                    // keep nothing, so copy nothing
}

type fileKey struct{ name, sum string }

// decodedFile is what one file decoded to.
type decodedFile struct {
	objs []*api.Decoded
	errs api.ErrorList
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
	objs, errs := d.Decode(c)
	return Revision{ID: id, Objects: objs, Errors: errs}
}

// Decode is Contents.Decode, reusing what the previous call decoded.
func (d *Decoder) Decode(c Contents) ([]*api.Decoded, api.ErrorList) {
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
		objs, errs := api.DecodeStream(files[i].Name, files[i].Data, api.DecodeOptions{DropStatus: true, ValidateRest: true})
		results[i] = decodedFile{objs, errs}
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
			kept[keys[i]] = r
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

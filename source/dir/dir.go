package dir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/source"
)

// DefaultDebounce is how long a directory must stay quiet after a change
// before it is read: long enough for an editor's save, a `git checkout` or
// a file written in several steps to end, short enough to feel immediate.
const DefaultDebounce = 200 * time.Millisecond

// Options are what a Dir needs besides its Spec.
type Options struct {
	// Clock times the debounce and the relist; nil is the real clock.
	Clock clock.WithTicker
	// Logger receives the source's failures; nil discards them.
	Logger *slog.Logger
	// Flat reads only the files directly in the directory, as the agent's
	// --manifest-dir (SPEC §2); the zero value is recursive, as a --source
	// path is (SPEC §3).
	Flat bool
	// Debounce is the quiet period after a change; 0 is DefaultDebounce.
	Debounce time.Duration
	// OnChange, for Fetch, is called (from the watch's goroutine) when a
	// file under the directory changed: the caller fetches again after
	// Debounce. Nil watches nothing.
	OnChange func()
}

// Dir is the source of a directory or a single file.
type Dir struct {
	root    string
	spec    source.Spec
	opts    Options
	log     *slog.Logger
	trigger source.Signal
	// Only Run's goroutine uses these.
	lastID  string // of the last read that succeeded
	decoder source.Decoder
	// cache spares a relist reading the files that did not change.
	cache source.ReadCache
	// skipped is the links out of the tree last warned of.
	skipped string

	// fetchWatch and its hint forwarder serve Fetch's OnChange.
	fetchWatch *watch
	stopHints  chan struct{}
	hintsDone  sync.WaitGroup
}

var _ source.Source = (*Dir)(nil)

// New makes the source of spec, a dir Spec whose URL is the path.
func New(spec source.Spec, opts Options) (*Dir, error) {
	if spec.Type != source.TypeDir {
		return nil, fmt.Errorf("dir source %q: type is %q", spec.Name, spec.Type)
	}
	if spec.URL == "" {
		return nil, fmt.Errorf("dir source %q: no path", spec.Name)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if spec.Interval <= 0 {
		spec.Interval = source.DefaultDirInterval
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	root, err := filepath.Abs(spec.URL)
	if err != nil {
		return nil, fmt.Errorf("dir source %q: %w", spec.Name, err)
	}
	log = log.With("source", spec.Name, "path", root)
	return &Dir{root: root, spec: spec, opts: opts, log: log, trigger: source.NewSignal(), decoder: source.NewDecoder(spec)}, nil
}

// Trigger asks for a read now; it never blocks.
func (d *Dir) Trigger() { d.trigger.Fire() }

// Run watches and reads the directory until ctx is done. When the system
// cannot watch (inotify limits), it logs why and relies on the relist.
func (d *Dir) Run(ctx context.Context, out chan<- source.Revision) error {
	hints := source.NewSignal()
	w, err := newWatch(d.root, !d.opts.Flat, hints, d.log)
	if err != nil {
		d.log.Warn("cannot watch the directory; changes are seen at each relist only", "err", err, "relist", d.spec.Interval)
	} else {
		defer w.close()
	}
	loop := &source.Loop{
		Clock:    d.opts.Clock,
		Interval: d.spec.Interval,
		Debounce: d.opts.Debounce,
		Logger:   d.log,
		Check: func(_ context.Context, have string) source.Revision {
			rev, dirs := d.read(have)
			if w != nil {
				w.sync(dirs)
			}
			return rev
		},
	}
	return loop.Run(ctx, out, d.trigger, hints)
}

var _ source.Fetcher = (*Dir)(nil)

// Fetch reads the directory once, as one of Run's checks does, and keeps
// a watch on it when Options.OnChange is set.
func (d *Dir) Fetch(_ context.Context, have string) source.Revision {
	if d.opts.OnChange != nil && d.fetchWatch == nil {
		hints := source.NewSignal()
		w, err := newWatch(d.root, !d.opts.Flat, hints, d.log)
		if err != nil {
			d.log.Warn("cannot watch the directory; changes are seen at each relist only", "err", err, "relist", d.spec.Interval)
		} else {
			d.fetchWatch, d.stopHints = w, make(chan struct{})
			d.hintsDone.Go(func() {
				for {
					select {
					case <-d.stopHints:
						return
					case <-hints:
						d.opts.OnChange()
					}
				}
			})
		}
	}
	rev, dirs := d.read(have)
	if d.fetchWatch != nil {
		d.fetchWatch.sync(dirs)
	}
	return rev
}

// Close stops the watch Fetch started.
func (d *Dir) Close() {
	if d.fetchWatch == nil {
		return
	}
	d.fetchWatch.close()
	close(d.stopHints)
	d.hintsDone.Wait()
	d.fetchWatch = nil
}

// read reads the directory, decoding only when its content hash is not
// the one the receiver has, and returns the folders to watch.
func (d *Dir) read(have string) (source.Revision, []string) {
	contents, dirs, err := source.ReadDir(d.root, source.ReadDirOptions{Flat: d.opts.Flat, Cache: &d.cache, Have: d.decoder.Has})
	if dirs == nil {
		dirs = []string{watchedParent(d.root, err)}
	}
	if err != nil {
		return source.Revision{ID: d.lastID, Err: err}, dirs
	}
	d.warnSkipped(contents.Skipped)
	id := contents.ContentHash()
	d.lastID = id
	if id == have {
		return source.Revision{ID: id}, dirs
	}
	return d.decoder.Revision(contents, id), dirs
}

// watchedParent is the folder watched when root is not a folder: the one
// holding root, so that a file replaced by rename, or a root that is
// created later, is seen.
func watchedParent(root string, err error) string {
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return filepath.Dir(root)
	}
	return root
}

// maxSkippedNamed is how many links out of the tree one warning names.
const maxSkippedNamed = 10

// warnSkipped says which links out of the tree were not followed: once
// each time they change, naming the first few.
func (d *Dir) warnSkipped(links []source.SkippedLink) {
	named := make([]string, 0, min(len(links), maxSkippedNamed))
	for _, l := range links[:min(len(links), maxSkippedNamed)] {
		named = append(named, l.String())
	}
	list := strings.Join(named, ", ")
	if len(links) > maxSkippedNamed {
		list += fmt.Sprintf(", and %d more", len(links)-maxSkippedNamed)
	}
	if list == d.skipped {
		return
	}
	d.skipped = list
	if len(links) > 0 {
		d.log.Warn("symbolic links out of the source's directory are not followed", "count", len(links), "links", list)
	}
}

package dir

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/berth-dev/berth/source"
)

// watch turns file-system events under a root into hints for the loop, and
// keeps a watch on every folder the last read walked. Events of dot files
// and dot folders are ignored: editors' swap files come and go there.
type watch struct {
	root      string
	recursive bool
	fsw       *fsnotify.Watcher
	hints     source.Signal
	log       *slog.Logger
	done      sync.WaitGroup

	mu      sync.Mutex
	watched map[string]bool
	warned  bool // a watch could not be added; said once
}

func newWatch(root string, recursive bool, hints source.Signal, log *slog.Logger) (*watch, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watch{root: root, recursive: recursive, fsw: fsw, hints: hints, log: log, watched: map[string]bool{}}
	w.done.Go(w.events)
	return w, nil
}

// close stops the watcher and waits for its goroutine.
func (w *watch) close() {
	_ = w.fsw.Close()
	w.done.Wait()
}

func (w *watch) events() {
	for {
		select {
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			w.event(ev)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			// Most often an overflow: events were lost, so read again.
			w.log.Debug("directory watch error", "err", err)
			w.hints.Fire()
		}
	}
}

func (w *watch) event(ev fsnotify.Event) {
	if !w.relevant(ev.Name) {
		return
	}
	if w.recursive && ev.Has(fsnotify.Create) && ev.Name != w.root {
		// Watch a new folder at once, and what it already holds, so that
		// files written into it before the next read are seen.
		if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
			w.addTree(ev.Name)
		}
	}
	w.hints.Fire()
}

// relevant reports whether an event's path is the root or a path below
// it that the source reads: no dot file or dot folder on the way, and
// directly in root when the source is flat.
func (w *watch) relevant(name string) bool {
	if name == w.root {
		return true
	}
	rel, ok := strings.CutPrefix(name, w.root+string(filepath.Separator))
	if !ok {
		return false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if !w.recursive && len(parts) > 1 {
		return false
	}
	for _, p := range parts {
		if strings.HasPrefix(p, ".") {
			return false
		}
	}
	return true
}

// addTree watches a new folder and the folders below it.
func (w *watch) addTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		w.mu.Lock()
		w.addLocked(p)
		w.mu.Unlock()
		return nil
	})
}

// sync makes the watched folders the ones a read walked.
func (w *watch) sync(dirs []string) {
	want := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		want[d] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for d := range w.watched {
		if !want[d] {
			_ = w.fsw.Remove(d) // fails when the folder is gone, and so unwatched
			delete(w.watched, d)
		}
	}
	for d := range want {
		w.addLocked(d)
	}
}

func (w *watch) addLocked(d string) {
	if w.watched[d] {
		return
	}
	if err := w.fsw.Add(d); err != nil {
		if !w.warned && !os.IsNotExist(err) {
			w.log.Warn("cannot watch a folder; its changes are seen at each relist only", "dir", d, "err", err)
			w.warned = true
		}
		return
	}
	w.watched[d] = true
}

package dir

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/source"
)

func configMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: \"" + value + "\"\n"
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// objects lists a revision's objects as file:name=value.
func objects(r source.Revision) string {
	var s []string
	for _, d := range r.Objects {
		s = append(s, d.File+":"+d.Object.GetName())
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

func TestDirEditsRenamesAndDeletes(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a.yaml"), configMap("a", "1"))
	write(t, filepath.Join(root, "notes.txt"), "not a manifest")
	h := start(t, root, Options{})

	first := h.receive()
	if !first.OK() || objects(first) != "a.yaml:a" || !strings.HasPrefix(first.ID, "sha256:") {
		t.Fatalf("first revision %+v", first)
	}

	write(t, filepath.Join(root, "a.yaml"), configMap("a", "2"))
	edited := h.settle()
	if edited.ID == first.ID || objects(edited) != "a.yaml:a" {
		t.Fatalf("after an edit: %s %s", edited.ID, objects(edited))
	}

	if err := os.Rename(filepath.Join(root, "a.yaml"), filepath.Join(root, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	renamed := h.settle()
	if objects(renamed) != "b.yaml:a" {
		t.Fatalf("after a rename: %s", objects(renamed))
	}

	write(t, filepath.Join(root, "c.yaml"), configMap("c", "1"))
	if got := objects(h.settle()); got != "b.yaml:a c.yaml:c" {
		t.Fatalf("after a new file: %s", got)
	}
	if err := os.Remove(filepath.Join(root, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	if got := objects(h.settle()); got != "c.yaml:c" {
		t.Fatalf("after a delete: %s", got)
	}

	// Dot files never count; a trigger sends the same revision again.
	write(t, filepath.Join(root, ".c.yaml.swp"), configMap("swap", "1"))
	write(t, filepath.Join(root, ".hidden", "h.yaml"), configMap("hidden", "1"))
	h.src.Trigger()
	again := h.receive()
	if objects(again) != "c.yaml:c" {
		t.Fatalf("after dot files and a trigger: %s", objects(again))
	}
}

func TestDirNewSubfoldersAreWatched(t *testing.T) {
	root := t.TempDir()
	h := start(t, root, Options{})
	if r := h.receive(); !r.OK() || len(r.Objects) != 0 {
		t.Fatalf("empty dir: %+v", r)
	}
	write(t, filepath.Join(root, "apps", "web", "web.yaml"), configMap("web", "1"))
	if got := objects(h.settle()); got != "apps/web/web.yaml:web" {
		t.Fatalf("after a new subfolder: %s", got)
	}
	// An edit deep in the new folder is seen through its own watch.
	write(t, filepath.Join(root, "apps", "web", "more.yaml"), configMap("more", "1"))
	if got := objects(h.settle()); got != "apps/web/more.yaml:more apps/web/web.yaml:web" {
		t.Fatalf("after a file in the new subfolder: %s", got)
	}
	if err := os.RemoveAll(filepath.Join(root, "apps")); err != nil {
		t.Fatal(err)
	}
	if got := objects(h.settle()); got != "" {
		t.Fatalf("after removing the subfolder: %s", got)
	}
}

func TestDirTooBigAndBroken(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "ok.yaml"), configMap("ok", "1"))
	h := start(t, root, Options{})
	h.receive()

	big := filepath.Join(root, "big.yaml")
	write(t, big, "")
	if err := os.Truncate(big, source.MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	r := h.settle()
	if len(r.Errors) != 1 || r.Errors[0].File != "big.yaml" || !strings.Contains(r.Errors[0].Message, "10 MiB") {
		t.Fatalf("with a big file: errors %v", r.Errors)
	}
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	h.settle()

	write(t, filepath.Join(root, "bad.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata: [1]\n")
	r = h.settle()
	if len(r.Errors) != 1 || r.Errors[0].File != "bad.yaml" || r.Errors[0].Doc != 0 || r.Errors[0].Field != "data" {
		t.Fatalf("with a broken file: errors %v", r.Errors)
	}
}

func TestDirRelistCatchesWhatTheWatchMissed(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a.yaml"), configMap("a", "1"))
	// The debounce never ends on the fake clock: only the relist reads.
	h := start(t, root, Options{Debounce: 24 * time.Hour})
	first := h.receive()
	write(t, filepath.Join(root, "a.yaml"), configMap("a", "2"))
	h.clk.Step(20*time.Second + time.Millisecond)
	if r := h.receive(); r.ID == first.ID {
		t.Fatal("the relist sent the old revision")
	}
}

func TestDirFlat(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a.yaml"), configMap("a", "1"))
	write(t, filepath.Join(root, "sub", "b.yaml"), configMap("b", "1"))
	h := start(t, root, Options{Flat: true})
	if got := objects(h.receive()); got != "a.yaml:a" {
		t.Fatalf("flat: %s", got)
	}
	write(t, filepath.Join(root, "c.yaml"), configMap("c", "1"))
	if got := objects(h.settle()); got != "a.yaml:a c.yaml:c" {
		t.Fatalf("flat after a new file: %s", got)
	}
}

func TestDirSingleFileReplacedByRename(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "pod.yaml")
	write(t, file, configMap("a", "1"))
	write(t, filepath.Join(root, "other.yaml"), configMap("other", "1"))
	h := start(t, file, Options{})
	first := h.receive()
	if objects(first) != "pod.yaml:a" {
		t.Fatalf("single file: %s", objects(first))
	}
	// As editors save: write a temporary file, rename it over the old one.
	write(t, filepath.Join(root, ".pod.yaml.tmp"), configMap("b", "1"))
	if err := os.Rename(filepath.Join(root, ".pod.yaml.tmp"), file); err != nil {
		t.Fatal(err)
	}
	if got := objects(h.settle()); got != "pod.yaml:b" {
		t.Fatalf("after replace: %s", got)
	}
}

func TestDirMissingRootRecovers(t *testing.T) {
	root := filepath.Join(t.TempDir(), "later")
	h := start(t, root, Options{})
	r := h.receive()
	if r.Err == nil || !strings.Contains(r.Err.Error(), "no such file or directory") || r.ID != "" {
		t.Fatalf("missing root: %+v", r)
	}
	write(t, filepath.Join(root, "a.yaml"), configMap("a", "1"))
	// The parent's watch sees the folder appear; the retry would too.
	r = h.settle()
	for r.Err != nil {
		h.clk.Step(source.RetryMax)
		r = h.receive()
	}
	if objects(r) != "a.yaml:a" {
		t.Fatalf("after the root appeared: %s", objects(r))
	}
}

// A file written in several steps, each soon after the last, makes one
// revision: the whole file. This runs on the real clock, with a quiet
// period far longer than the gaps between the steps.
func TestDirFileWrittenInSteps(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a.yaml"), configMap("a", "1"))
	h := start(t, root, Options{Clock: realClock(), Debounce: time.Second})
	h.receive()

	f, err := os.Create(filepath.Join(root, "b.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := configMap("b", "1") + "---\n" + configMap("c", "1")
	for i := 0; i < len(doc); i += 16 {
		if _, err := f.WriteString(doc[i:min(i+16, len(doc))]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // a slow writer, not a wait for a result
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r := h.receive()
	if !r.OK() || objects(r) != "a.yaml:a b.yaml:b b.yaml:c" {
		t.Fatalf("after a write in steps: %s, errors %v", objects(r), r.Errors)
	}
	select {
	case r := <-h.out:
		t.Fatalf("a second revision for one write: %s %v", objects(r), r.Errors)
	case <-time.After(1500 * time.Millisecond):
	}
}

// lockedBuffer is a log's output, written by the source's goroutine and
// read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDirSkipsLinksOutOfTheTree: a link to a manifest out of the source's
// folder is not applied, nor is a folder out of it walked or watched; one
// warning names the first few such links, once until they change.
func TestDirSkipsLinksOutOfTheTree(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "src")
	write(t, filepath.Join(root, "a.yaml"), configMap("a", "1"))
	write(t, filepath.Join(base, "elsewhere", "stolen.yaml"), configMap("stolen", "1"))
	for i := range 25 {
		if err := os.Symlink(filepath.Join(base, "elsewhere", "stolen.yaml"), filepath.Join(root, fmt.Sprintf("link%02d.yaml", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(base, filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	h := start(t, root, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r := h.receive()
	if !r.OK() || objects(r) != "a.yaml:a" {
		t.Fatalf("revision %s %v, want a.yaml alone", objects(r), r.Errors)
	}
	h.src.Trigger()
	h.receive()
	out := logs.String()
	if n := strings.Count(out, "symbolic links out of"); n != 1 {
		t.Errorf("%d warnings of links out of the tree, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "count=26") || !strings.Contains(out, "and 16 more") || len(out) > 4096 {
		t.Errorf("warning %q, want the first 10 of 26 links named", out)
	}
	// A change to the links says so again.
	if err := os.Remove(filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	h.src.Trigger()
	h.receive()
	if n := strings.Count(logs.String(), "symbolic links out of"); n != 2 {
		t.Errorf("%d warnings after the links changed, want 2", n)
	}
}

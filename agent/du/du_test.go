package du

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), n), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWalk(t *testing.T) {
	const mi = 1 << 20
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		budget int
		// min and max bound Bytes: blocks are allocated by the file
		// system, a little over what was written.
		min, max int64
		partial  bool
	}{
		{name: "missing", setup: func(t *testing.T, dir string) { os.Remove(dir) }, max: 0},
		{name: "empty", setup: func(*testing.T, string) {}, max: 64 << 10},
		{name: "files in subdirectories", setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a"), 2*mi)
			write(t, filepath.Join(dir, "sub", "deeper", "b"), 3*mi)
		}, min: 5 * mi, max: 5*mi + 256<<10},
		{name: "hard link counted once", setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a"), 2*mi)
			if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
				t.Fatal(err)
			}
		}, min: 2 * mi, max: 2*mi + 128<<10},
		{name: "symbolic link not followed", setup: func(t *testing.T, dir string) {
			other := t.TempDir()
			write(t, filepath.Join(other, "big"), 4*mi)
			if err := os.Symlink(other, filepath.Join(dir, "l")); err != nil {
				t.Fatal(err)
			}
		}, max: 64 << 10},
		{name: "sparse file counts its blocks", setup: func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "sparse"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(64 * mi); err != nil {
				t.Fatal(err)
			}
		}, max: 64 << 10},
		{name: "budget stops the walk with a lower bound", setup: func(t *testing.T, dir string) {
			for _, n := range []string{"a", "b", "c", "d"} {
				write(t, filepath.Join(dir, n), mi)
			}
		}, budget: 3, min: 2 * mi, max: 2*mi + 128<<10, partial: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tree")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			u, err := Walk(dir, tt.budget)
			if err != nil {
				t.Fatal(err)
			}
			if u.Bytes < tt.min || u.Bytes > tt.max || u.Partial != tt.partial {
				t.Errorf("Walk = %+v, want bytes in [%d, %d], partial %v", u, tt.min, tt.max, tt.partial)
			}
		})
	}
}

func TestUsageAdd(t *testing.T) {
	u := Usage{Bytes: 1, Entries: 2}
	u.Add(Usage{Bytes: 10, Entries: 20, Partial: true})
	u.Add(Usage{Bytes: 100})
	if u != (Usage{Bytes: 111, Entries: 22, Partial: true}) {
		t.Errorf("sum %+v", u)
	}
}

package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFile: a new file, then one replaced, each whole and of its
// mode, with no temporary file left beside it.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	for _, tc := range []struct {
		data string
		mode os.FileMode
	}{{"first\n", 0o600}, {"second, longer\n", 0o644}} {
		if err := WriteFile(path, []byte(tc.data), tc.mode); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != tc.data {
			t.Fatalf("read %q %v, want %q", got, err, tc.data)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != tc.mode {
			t.Fatalf("mode %v %v, want %v", fi.Mode().Perm(), err, tc.mode)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Fatalf("%d entries in the directory, want the file alone", len(entries))
		}
	}
}

// TestWriteFileFails: a file that cannot take path's place (a directory
// is there) leaves what was there and no temporary file, and the error
// names the path.
func TestWriteFileFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "taken")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "inside"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(path, []byte("new"), 0o600)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want one naming %s", err, path)
	}
	if got, _ := os.ReadFile(filepath.Join(path, "inside")); string(got) != "kept" {
		t.Errorf("what was there: %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the directory, want what was there alone", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("a file in a missing directory was written")
	}
}

package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(files []File) string {
	var n []string
	for _, f := range files {
		n = append(n, f.Name)
	}
	return strings.Join(n, " ")
}

func TestReadDir(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"a.yaml", "b.yml", "c.json", "notes.txt", ".hidden.yaml", "sub/d.yaml", "sub/deeper/e.yaml", ".git/config.yaml", "sub/.cache/f.yaml"} {
		write(t, filepath.Join(root, p), configMap("x"))
	}
	// A loop, a link to a folder already read, a link to a file, a
	// dangling link.
	for link, target := range map[string]string{"sub/loop": "..", "again": "sub", "link.yaml": "a.yaml", "dangling.yaml": "nowhere.yaml"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}

	c, dirs, err := ReadDir(root, ReadDirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(c.Files), "a.yaml b.yml c.json sub/d.yaml sub/deeper/e.yaml"; got != want {
		t.Errorf("recursive: files %q; want %q", got, want)
	}
	if len(c.Problems) != 0 {
		t.Errorf("problems %v", c.Problems)
	}
	if len(dirs) != 3 || dirs[0] != root {
		t.Errorf("dirs %v; want root, sub, sub/deeper", dirs)
	}

	c, dirs, err = ReadDir(root, ReadDirOptions{Flat: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(c.Files), "a.yaml b.yml c.json"; got != want {
		t.Errorf("flat: files %q; want %q", got, want)
	}
	if len(dirs) != 1 {
		t.Errorf("flat: dirs %v; want the root only", dirs)
	}

	c, dirs, err = ReadDir(filepath.Join(root, ".hidden.yaml"), ReadDirOptions{})
	if err != nil || names(c.Files) != ".hidden.yaml" || dirs != nil {
		t.Errorf("a file named as the root: %q %v %v; want it read whatever its name", names(c.Files), dirs, err)
	}

	if _, _, err := ReadDir(filepath.Join(root, "missing"), ReadDirOptions{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing root: %v", err)
	}
}

func TestReadDirTooBigAndUnreadable(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "ok.yaml"), configMap("ok"))
	big := filepath.Join(root, "big.yaml")
	write(t, big, "")
	if err := os.Truncate(big, MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "exact.yaml"), "")
	if err := os.Truncate(filepath.Join(root, "exact.yaml"), MaxFileSize); err != nil {
		t.Fatal(err)
	}
	c, _, err := ReadDir(root, ReadDirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.Files); got != "exact.yaml ok.yaml" {
		t.Errorf("files %q; want the one at the limit and ok.yaml", got)
	}
	if len(c.Problems) != 1 || c.Problems[0].File != "big.yaml" || !strings.Contains(c.Problems[0].Error(), "big.yaml: refused: 10485761 bytes, larger than the 10 MiB limit") {
		t.Errorf("problems %v; want big.yaml refused", c.Problems)
	}

	if os.Geteuid() == 0 {
		return // root reads everything
	}
	locked := filepath.Join(root, "locked.yaml")
	write(t, locked, configMap("l"))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	c, _, _ = ReadDir(root, ReadDirOptions{})
	if len(c.Problems) != 2 || !strings.Contains(c.Problems[1].Error(), "locked.yaml: cannot read: permission denied") {
		t.Errorf("problems %v; want locked.yaml unreadable", c.Problems)
	}
}

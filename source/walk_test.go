package source

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// withRacyWindow sets how recently changed a file must be to be read at
// every relist, for one test.
func withRacyWindow(t *testing.T, d time.Duration) {
	old := racyWindow
	racyWindow = d
	t.Cleanup(func() { racyWindow = old })
}

func TestReadDirCacheReadsOnlyWhatChanged(t *testing.T) {
	withRacyWindow(t, 0) // the files below are not written again within a tick of a read
	root := t.TempDir()
	write(t, filepath.Join(root, "a.yaml"), "kind: A\n")
	write(t, filepath.Join(root, "sub/b.yaml"), "kind: B\n")
	write(t, filepath.Join(root, "gone.yaml"), "kind: G\n")
	var cache ReadCache
	held := map[string]string{} // what the receiver holds, name → sum
	have := func(name, sum string) bool { return held[name] == sum }
	read := func() map[string]File {
		t.Helper()
		c, _, err := ReadDir(root, ReadDirOptions{Cache: &cache, Have: have})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]File{}
		for _, f := range c.Files {
			if f.Sum == "" {
				t.Errorf("%s: no Sum", f.Name)
			}
			out[f.Name] = f
		}
		return out
	}

	first := read()
	for name, f := range first {
		if f.Data == nil {
			t.Errorf("first read: %s left out", name)
		}
		held[name] = f.Sum
	}
	firstID := Contents{Files: slices.Collect(maps.Values(first))}.ContentHash()

	// Nothing changed: nothing read, and the same revision ID.
	second := read()
	for name, f := range second {
		if f.Data != nil {
			t.Errorf("unchanged %s read again", name)
		}
	}
	if id := (Contents{Files: slices.Collect(maps.Values(second))}).ContentHash(); id != firstID {
		t.Errorf("unchanged tree: ID %s, was %s", id, firstID)
	}

	// The receiver lost a content: that file is read.
	delete(held, "a.yaml")
	if f := read()["a.yaml"]; f.Data == nil {
		t.Error("a content the receiver lacks was left out")
	}
	held["a.yaml"] = first["a.yaml"].Sum

	// Rewritten with the same size and its old modification time put back:
	// the change time still tells.
	p := filepath.Join(root, "sub/b.yaml")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // past the filesystem clock's tick, so that ctime moves
	write(t, p, "kind: C\n")
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	third := read()
	if f := third["sub/b.yaml"]; f.Data == nil || string(f.Data) != "kind: C\n" || f.Sum == first["sub/b.yaml"].Sum {
		t.Errorf("a rewritten file: %+v", f)
	}
	if _, ok := third["gone.yaml"]; !ok {
		t.Fatal("gone.yaml missing before its removal")
	}

	// A removed file is forgotten.
	if err := os.Remove(filepath.Join(root, "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, ok := read()["gone.yaml"]; ok {
		t.Error("a removed file is still listed")
	}
	if _, ok := cache.files["gone.yaml"]; ok {
		t.Error("a removed file is still cached")
	}
}

func TestReadDirCacheRereadsRacyFiles(t *testing.T) {
	withRacyWindow(t, time.Hour) // every file changed "just now"
	root := t.TempDir()
	write(t, filepath.Join(root, "a.yaml"), "kind: A\n")
	var cache ReadCache
	have := func(string, string) bool { return true }
	for i := range 2 {
		c, _, err := ReadDir(root, ReadDirOptions{Cache: &cache, Have: have})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Files) != 1 || c.Files[0].Data == nil {
			t.Errorf("read %d: a file changed within the racy window was left out: %+v", i, c.Files)
		}
	}
}

// TestReadDirStaysInsideRoot: links that lead out of the root, to a
// manifest or to a folder, are skipped and listed, never read or walked;
// links that stay inside are followed, and a root that is itself a link
// counts as the folder it leads to.
func TestReadDirStaysInsideRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "src")
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(root, "a.yaml"), configMap("a"))
	write(t, filepath.Join(root, "apps", "b.yaml"), configMap("b"))
	write(t, filepath.Join(outside, "secret.yaml"), configMap("secret"))
	write(t, filepath.Join(outside, "deep", "more.yaml"), configMap("more"))
	for link, target := range map[string]string{
		"stolen.yaml":      filepath.Join(outside, "secret.yaml"),
		"relative.yaml":    "../outside/secret.yaml",
		"tree":             outside,
		"apps/up":          "../..",
		"inside.yaml":      "apps/b.yaml",
		"apps/again":       "..",
		"apps/sibling.yml": "../a.yaml",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []string{root, filepath.Join(base, "via-link")} {
		if r != root {
			if err := os.Symlink(root, r); err != nil {
				t.Fatal(err)
			}
		}
		c, dirs, err := ReadDir(r, ReadDirOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := names(c.Files), "a.yaml apps/b.yaml"; got != want {
			t.Errorf("%s: files %q, want %q", r, got, want)
		}
		var skipped []string
		for _, l := range c.Skipped {
			skipped = append(skipped, l.String())
		}
		slices.Sort(skipped)
		want := []string{
			"apps/up -> " + base,
			"relative.yaml -> " + filepath.Join(outside, "secret.yaml"),
			"stolen.yaml -> " + filepath.Join(outside, "secret.yaml"),
			"tree -> " + outside,
		}
		if !slices.Equal(skipped, want) {
			t.Errorf("%s: skipped %q, want %q", r, skipped, want)
		}
		for _, d := range dirs {
			if strings.Contains(d, "outside") || strings.HasSuffix(d, "up") {
				t.Errorf("%s: walked %s, out of the root", r, d)
			}
		}
		if !slices.Equal(dirs, []string{r, filepath.Join(r, "apps")}) {
			t.Errorf("%s: dirs %v", r, dirs)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		dir, path string
		want      bool
	}{
		{"/src", "/src", true},
		{"/src", "/src/a.yaml", true},
		{"/src", "/src/..a/b", true},
		{"/src", "/srcx/a.yaml", false},
		{"/src", "/", false},
		{"/src", "/other", false},
		{"/", "/usr", true},
	} {
		if got := within(tt.dir, tt.path); got != tt.want {
			t.Errorf("within(%s, %s) = %v, want %v", tt.dir, tt.path, got, tt.want)
		}
	}
}

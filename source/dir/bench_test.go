package dir

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// bigDir writes n ConfigMaps in 100 folders.
func bigDir(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	for i := range n {
		p := filepath.Join(root, fmt.Sprintf("team-%02d", i%100), fmt.Sprintf("app-%05d.yaml", i))
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(configMap(fmt.Sprintf("app-%05d", i), "v1")), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// A file changed in the last 2 s is read at every relist (its times
	// cannot yet be trusted); let the tree age, as a checkout does.
	time.Sleep(2100 * time.Millisecond)
	return root
}

func newBench(b *testing.B, root string) *Dir {
	b.Helper()
	d, err := New(sourceSpec(root), Options{})
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkRelist10k is a relist of 10,000 unchanged files: each is
// stat'ed, none read again, nothing decoded.
func BenchmarkRelist10k(b *testing.B) {
	d := newBench(b, bigDir(b, 10_000))
	first, _ := d.read("")
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := d.read(first.ID); r.ID != first.ID || r.Objects != nil {
			b.Fatal("changed")
		}
	}
}

// BenchmarkChangeOne10k is the read after one of 10,000 files changed:
// only that file is decoded again.
func BenchmarkChangeOne10k(b *testing.B) {
	root := bigDir(b, 10_000)
	d := newBench(b, root)
	last, _ := d.read("")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		p := filepath.Join(root, "team-07", "app-00007.yaml")
		if err := os.WriteFile(p, []byte(configMap("app-00007", fmt.Sprint(i))), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r, _ := d.read(last.ID)
		if r.ID == last.ID || len(r.Objects) != 10_000 {
			b.Fatal("unchanged")
		}
		last = r
	}
}

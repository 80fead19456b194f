package bolt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
)

// FuzzOpenDamaged opens a good store file cut short at any length, as a
// full disk or a copy interrupted leaves it: it is refused with an error,
// or opened and loaded when what was cut held nothing; the process never
// panics.
func FuzzOpenDamaged(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "good.db")
	s := open(f, good)
	for i := range 300 {
		if _, err := s.Create(context.Background(), configMap(fmt.Sprintf("c%d", i), map[string]string{"v": strings.Repeat("x", 500)})); err != nil {
			f.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	base, err := os.ReadFile(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(65536))
	f.Add(uint32(4096))
	f.Add(uint32(3*4096 + 100))
	f.Fuzz(func(t *testing.T, size uint32) {
		data := base[:int(size)%(len(base)+1)]
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := Open(path)
		if err != nil {
			return
		}
		defer b.Close()
		if _, err := b.Load(func(api.Object) error { return nil }); err != nil {
			t.Errorf("opened, then: %v", err)
		}
	})
}

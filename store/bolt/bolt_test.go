package bolt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var cmKind, _ = api.LookupResource("configmaps")

func open(t testing.TB, path string) *store.Store {
	t.Helper()
	_, s := openBoth(t, path)
	return s
}

// openBoth opens a store over the file at path and returns its backend too.
func openBoth(t testing.TB, path string) (*Backend, *store.Store) {
	t.Helper()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.New(b, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b, s
}

func configMap(name string, data map[string]string) *api.ConfigMap {
	return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: data}
}

func TestRestartRestoresObjectsAndRevision(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	ctx := context.Background()
	for i := range 5 {
		if _, err := s.Create(ctx, configMap(fmt.Sprintf("c%d", i), map[string]string{"i": fmt.Sprint(i)})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Delete(ctx, cmKind, "default", "c0", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}}}
	if _, err := s.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Get(cmKind, "default", "c3")
	rev := s.Revision()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	defer s.Close()
	if s.Revision() != rev {
		t.Fatalf("revision %d after restart, want %d", s.Revision(), rev)
	}
	objs, _, _ := s.List(cmKind, store.Filter{})
	if len(objs) != 4 {
		t.Fatalf("%d configmaps after restart, want 4", len(objs))
	}
	after, err := s.Get(cmKind, "default", "c3")
	if err != nil {
		t.Fatal(err)
	}
	if after.GetUID() != before.GetUID() || after.GetResourceVersion() != before.GetResourceVersion() ||
		after.(*api.ConfigMap).Data["i"] != "3" {
		t.Fatalf("c3 changed across restart: %+v", after)
	}
	nodeKind, _ := api.LookupResource("nodes")
	if n, err := s.Get(nodeKind, "", "n1"); err != nil || n.GetLabels()["a"] != "b" {
		t.Fatalf("node after restart: %v %v", n, err)
	}
	// A watch from before the restart cannot be served; from now it can.
	if _, err := s.Watch(ctx, store.WatchOptions{Kind: cmKind, Revision: rev - 1}); !store.IsGone(err) {
		t.Fatalf("watch from before restart: %v", err)
	}
	// Writes continue from the stored revision.
	obj, err := s.Create(ctx, configMap("next", nil))
	if err != nil {
		t.Fatal(err)
	}
	if obj.GetResourceVersion() != fmt.Sprint(rev+1) {
		t.Fatalf("first write after restart got rv %s, want %d", obj.GetResourceVersion(), rev+1)
	}
}

func TestSecondOpenFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("second open: %v", err)
	}
}

// Size reports the file's size, which grows as the store holds more.
func TestSize(t *testing.T) {
	b, s := openBoth(t, filepath.Join(t.TempDir(), "state.db"))
	defer s.Close()
	empty, err := b.Size()
	if err != nil || empty <= 0 {
		t.Fatalf("size of a new store: %d, %v", empty, err)
	}
	big := map[string]string{"data": strings.Repeat("x", 256<<10)}
	for i := range 4 {
		if _, err := s.Create(context.Background(), configMap(fmt.Sprint("c", i), big)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.Size(); err != nil || n < empty+1<<20 {
		t.Fatalf("size after 1 MiB of objects: %d (was %d), %v", n, empty, err)
	}
}

// TestDamagedFileRefused opens store files damaged in two ways, cut short
// (`truncate -s 65536 state.db`) and with pages overwritten by zeros: each
// is refused with an error naming the file and what to do, where bbolt
// alone panics in a goroutine of its own and takes the process down.
func TestDamagedFileRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s := open(t, path)
	for i := range 300 {
		if _, err := s.Create(context.Background(), configMap(fmt.Sprintf("c%d", i), map[string]string{"v": strings.Repeat("x", 500)})); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if len(data) < 200*page {
		t.Fatalf("the store file is %d bytes, too small to damage", len(data))
	}
	zeroed := slices.Clone(data)
	clear(zeroed[20*page : 200*page])
	for name, damaged := range map[string][]byte{"truncated.db": data[:65536], "zeroed.db": zeroed} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := Open(p)
		if err == nil {
			b.Close()
			t.Errorf("%s: opened", name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, p) || !strings.Contains(msg, "damaged") || !strings.Contains(msg, "restore a copy") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The intact file still opens.
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
}

package apply

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/bolt"
)

// largeRevision is a revision of n objects: a quarter each Deployments,
// Services, ConfigMaps and Secrets, one file per object as a repository
// of manifests would hold them. changed alters the data of ConfigMap 0.
func largeRevision(tb testing.TB, id string, n int, changed bool) source.Revision {
	tb.Helper()
	var files []string
	for i := range n / 4 {
		name := fmt.Sprintf("app-%05d", i)
		value := "v1"
		if changed && i == 0 {
			value = "v2"
		}
		files = append(files,
			name+"/deploy.yaml", deployment(name, 2),
			name+"/svc.yaml", service(name),
			name+"/cm.yaml", configMap(name, value),
			name+"/secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: "+name+"\nstringData:\n  password: hunter2\n")
	}
	rev := decode(tb, id, files...)
	if len(rev.Errors) > 0 {
		tb.Fatal(rev.Errors)
	}
	return rev
}

// boltApplier is an applier over a store on a bolt file, as the server
// runs it.
func boltApplier(tb testing.TB) (*Applier, *store.Store) {
	tb.Helper()
	b, err := bolt.Open(filepath.Join(tb.TempDir(), "state.db"))
	if err != nil {
		tb.Fatal(err)
	}
	st, err := store.New(b, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	ctx := context.Background()
	ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: api.NamespaceDefault}}
	api.Default(ns)
	for _, obj := range []api.Object{ns, &api.Source{ObjectMeta: metav1.ObjectMeta{Name: fleet}}} {
		if _, err := st.Create(ctx, obj); err != nil {
			tb.Fatal(err)
		}
	}
	return New(st, Options{Logger: slog.New(slog.DiscardHandler)}), st
}

// TestLargeRevision applies 10,000 objects in one transaction, then a
// revision that changes one of them, and checks that exactly that object
// (and the Source's status) is written. Times are logged, not asserted.
func TestLargeRevision(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("10,000 objects: not in -short or -race runs")
	}
	const n = 10000
	a, st := boltApplier(t)
	ctx := context.Background()
	start := time.Now()
	rev := largeRevision(t, "r1", n, false)
	decoded := time.Since(start)

	before := st.Revision()
	start = time.Now()
	res, err := a.Apply(ctx, fleet, rev, ApplyOptions{})
	first := time.Since(start)
	if err != nil || !res.Ready || res.Counts.Created != n {
		t.Fatalf("first sync: %v %+v", err, res)
	}
	if got := st.Revision(); got != before+1 {
		t.Errorf("first sync took %d transactions", got-before)
	}

	rev2 := largeRevision(t, "r2", n, true)
	before = st.Revision()
	start = time.Now()
	res, err = a.Apply(ctx, fleet, rev2, ApplyOptions{})
	second := time.Since(start)
	if err != nil || res.Counts != (Counts{Updated: 1, Unchanged: n - 1}) {
		t.Fatalf("second sync: %v %+v", err, res)
	}
	var written []string
	snap := st.Snapshot()
	for _, k := range api.Kinds() {
		objs, err := snap.List(k, store.Filter{Predicate: func(o api.Object) bool { return o.GetResourceVersion() == fmt.Sprint(before+1) }})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			written = append(written, KeyOf(o).String())
		}
	}
	slices.Sort(written)
	if want := []string{"ConfigMap/default/app-00000", "Source/fleet"}; !slices.Equal(written, want) {
		t.Errorf("second sync wrote %s", strings.Join(written, ", "))
	}
	t.Logf("%d objects: decode %v; first sync (validate, plan, write, bolt commit) %v; one-object change %v", n, decoded, first, second)
}

func BenchmarkApplyUnchanged10000(b *testing.B) {
	a, _ := boltApplier(b)
	ctx := context.Background()
	if res, err := a.Apply(ctx, fleet, largeRevision(b, "r0", 10000, false), ApplyOptions{}); err != nil || !res.Ready {
		b.Fatal(err, res.Message)
	}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		rev := largeRevision(b, fmt.Sprint("r", i+1), 10000, i%2 == 0)
		b.StartTimer()
		if res, err := a.Apply(ctx, fleet, rev, ApplyOptions{}); err != nil || res.Counts.Updated != 1 {
			b.Fatal(err, res.Counts)
		}
	}
}

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
// With a Decoder, the revision is decoded as a source decodes it: the
// files it decoded before give back the very same objects.
func largeRevision(tb testing.TB, dec *source.Decoder, id string, n int, changed bool) source.Revision {
	tb.Helper()
	var c source.Contents
	for i := range n / 4 {
		name := fmt.Sprintf("app-%05d", i)
		value := "v1"
		if changed && i == 0 {
			value = "v2"
		}
		c.Files = append(c.Files,
			source.File{Name: name + "/deploy.yaml", Data: []byte(deployment(name, 2))},
			source.File{Name: name + "/svc.yaml", Data: []byte(service(name))},
			source.File{Name: name + "/cm.yaml", Data: []byte(configMap(name, value))},
			source.File{Name: name + "/secret.yaml", Data: []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\nstringData:\n  password: hunter2\n")})
	}
	var rev source.Revision
	if dec != nil {
		rev = dec.Revision(c, id)
	} else {
		rev = c.Revision(id)
	}
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
// (and the Source's status) is written. The second revision comes both
// ways: from the source's Decoder, which gives back the very objects of
// the files it did not decode again, and decoded afresh, as after a
// restart of the source, where every object is compared. Times are
// logged, not asserted.
func TestLargeRevision(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("10,000 objects: not in -short or -race runs")
	}
	const n = 10000
	for _, tc := range []struct {
		name   string
		shared bool
	}{{"decoder", true}, {"fresh", false}} {
		t.Run(tc.name, func(t *testing.T) {
			a, st := boltApplier(t)
			ctx := context.Background()
			var dec *source.Decoder
			if tc.shared {
				dec = &source.Decoder{}
			}
			start := time.Now()
			rev := largeRevision(t, dec, "r1", n, false)
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

			start = time.Now()
			rev2 := largeRevision(t, dec, "r2", n, true)
			decoded2 := time.Since(start)
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
				if k == eventKind {
					continue // the applied revision's event
				}
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
			t.Logf("%d objects: decode %v; first sync (validate, plan, write, bolt commit) %v; one-object change: decode %v, apply %v", n, decoded, first, decoded2, second)
		})
	}
}

func BenchmarkApplyUnchanged10000(b *testing.B) {
	a, _ := boltApplier(b)
	ctx := context.Background()
	dec := &source.Decoder{}
	if res, err := a.Apply(ctx, fleet, largeRevision(b, dec, "r0", 10000, false), ApplyOptions{}); err != nil || !res.Ready {
		b.Fatal(err, res.Message)
	}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		rev := largeRevision(b, dec, fmt.Sprint("r", i+1), 10000, i%2 == 0)
		b.StartTimer()
		if res, err := a.Apply(ctx, fleet, rev, ApplyOptions{}); err != nil || res.Counts.Updated != 1 {
			b.Fatal(err, res.Counts)
		}
	}
}

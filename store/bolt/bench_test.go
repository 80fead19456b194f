package bolt

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"

	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

// BenchmarkCreatePods measures batched creation on a bolt file: every
// acknowledged transaction is fsynced, and transactions from concurrent
// writers share fsyncs.
func BenchmarkCreatePods(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(map[int]string{1: "writers=1", 4: "writers=4"}[workers], func(b *testing.B) {
			be, err := Open(filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			s, err := store.New(be, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			d := storetest.CreatePods(b, s, storetest.MakePods(b.N, 5000), 1000, workers)
			b.ReportMetric(float64(b.N)/d.Seconds(), "pods/s")
		})
	}
}

// BenchmarkSmallTransactions measures single-object transactions from 64
// concurrent writers, the API server's pattern, where group commit matters.
func BenchmarkSmallTransactions(b *testing.B) {
	be, err := Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := store.New(be, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	d := storetest.CreatePods(b, s, storetest.MakePods(b.N, 5000), 1, 64)
	b.ReportMetric(float64(b.N)/d.Seconds(), "txn/s")
}

// BenchmarkOpen100kPods measures what a server's start reads of a bolt
// file holding 100,000 pods: the damage check that runs before bbolt
// opens it for writing (the page walk, the guarded key walk and bbolt's
// own Check), against the whole start (the check, the open and loading
// every object).
func BenchmarkOpen100kPods(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.db")
	be, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := store.New(be, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	storetest.CreatePods(b, s, storetest.MakePods(100000, 5000), 1000, 4)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := checkIntact(path, slog.Default()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("start", func(b *testing.B) {
		for b.Loop() {
			be, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			s, err := store.New(be, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkConflictingUpdates is 64 writers updating 16 objects, each
// with the resourceVersion it last read, as controllers do: many meet a
// newer version, whose conflict is answered once that version is
// durable. It reports the updates made, the conflicts answered, and the
// 99th percentile of the time to an answer of either kind.
func BenchmarkConflictingUpdates(b *testing.B) {
	be, err := Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := store.New(be, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const objects, writers = 16, 64
	cmKind := api.MustLookupResource("configmaps")
	for i := range objects {
		cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%d", i)}}
		if _, err := s.Create(ctx, cm); err != nil {
			b.Fatal(err)
		}
	}
	var (
		next                atomic.Int64
		updated, conflicted atomic.Int64
		mu                  sync.Mutex
		latencies           []time.Duration
		wg                  sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			var mine []time.Duration
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				name := fmt.Sprintf("cm-%d", (int(i)+w)%objects)
				obj, err := s.Get(cmKind, "default", name)
				if err != nil {
					b.Error(err)
					return
				}
				cm := obj.DeepCopyObject().(*api.ConfigMap)
				cm.Data = map[string]string{"n": strconv.FormatInt(i, 10)}
				t0 := time.Now()
				_, err = s.Update(ctx, cm)
				mine = append(mine, time.Since(t0))
				switch {
				case err == nil:
					updated.Add(1)
				case store.IsConflict(err):
					conflicted.Add(1)
				default:
					b.Error(err)
					return
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	d := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(updated.Load())/d.Seconds(), "updates/s")
	b.ReportMetric(float64(conflicted.Load())/d.Seconds(), "conflicts/s")
	if len(latencies) > 0 {
		b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50-µs")
	}
}

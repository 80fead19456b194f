package bolt

import (
	"path/filepath"
	"testing"

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

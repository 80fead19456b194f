package bolt

import (
	"log/slog"
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

package etcd

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/store/storetest"
)

// BenchmarkCreatePods measures batched creation through a leader over an
// etcd that fsyncs, as the bolt backend's twin does: transactions of
// 1,000 pods from one writer and from four, whose commits share etcd
// requests (group commit).
func BenchmarkCreatePods(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(map[int]string{1: "writers=1", 4: "writers=4"}[workers], func(b *testing.B) {
			_, lead := leader(b, etcdtest.StartDurable(b), nil)
			d := storetest.CreatePods(b, lead, storetest.MakePods(b.N, 5000), 1000, workers)
			b.ReportMetric(float64(b.N)/d.Seconds(), "pods/s")
		})
	}
}

// BenchmarkSmallTransactions measures single-pod transactions from 64
// writers, the API server's pattern, through a leader over an etcd that
// fsyncs.
func BenchmarkSmallTransactions(b *testing.B) {
	_, lead := leader(b, etcdtest.StartDurable(b), nil)
	d := storetest.CreatePods(b, lead, storetest.MakePods(b.N, 5000), 1, 64)
	b.ReportMetric(float64(b.N)/d.Seconds(), "txn/s")
}

// BenchmarkFollowerLag measures how long after the leader acknowledged a
// single-pod transaction a follower's readers see it: the etcd watch, the
// decoding and the replay. Writes come one at a time, so that each lag
// is a commit's alone.
func BenchmarkFollowerLag(b *testing.B) {
	ep := etcdtest.StartDurable(b)
	_, lead := leader(b, ep, nil)
	follower := newStore(b, open(b, ep, nil))
	pods := storetest.MakePods(b.N, 5000)
	lags := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for _, p := range pods {
		rev, err := lead.Txn(ctx, func(tx *store.Txn) error {
			_, err := tx.Create(p)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		if err := follower.WaitRevision(ctx, rev); err != nil {
			b.Fatal(err)
		}
		lags = append(lags, time.Since(acked))
	}
	b.StopTimer()
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkLoad100kPods measures a control plane's start on an etcd
// store of 100,000 pods, half of them in the checkpoint and half in the
// log after it: the reading of both, the folding and the decoding.
func BenchmarkLoad100kPods(b *testing.B) {
	ep := etcdtest.Start(b)
	be, lead := leader(b, ep, func(o *Options) { o.CheckpointCommits = 1 << 30 })
	pods := storetest.MakePods(100000, 5000)
	var once sync.Once
	storetest.CreatePods(b, lead, pods[:50000], 1000, 2)
	if err := be.Checkpoint(context.Background()); err != nil {
		b.Fatal(err)
	}
	storetest.CreatePods(b, lead, pods[50000:], 1000, 2)
	b.ResetTimer()
	for range b.N {
		s := newStore(b, open(b, ep, nil))
		once.Do(func() {
			if n := len(contents(b, s)); n != 100000 {
				b.Fatalf("loaded %d objects", n)
			}
		})
		s.Close()
	}
}

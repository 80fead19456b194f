package plan

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

// BenchmarkPlan plans a revision of 1,000 Deployments of 5 replicas
// (5,000 pods) against 1,000 nodes holding 30,000 pods.
func BenchmarkPlan(b *testing.B) {
	const nodes, placed, deployments = 1000, 30000, 1000
	s := cluster(b, 0)
	ctx := context.Background()
	for i := range nodes {
		if _, err := s.Create(ctx, node(fmt.Sprintf("node-%d", i), "16", "64Gi")); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < placed; i += 500 {
		if _, err := s.Txn(ctx, func(tx *store.Txn) error {
			for j := i; j < min(i+500, placed); j++ {
				if _, err := tx.Create(storetest.Pod(j, storetest.NodeName(j, nodes))); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	docs := make([]string, deployments)
	for i := range docs {
		docs[i] = deployment(fmt.Sprintf("app-%d", i), 5, "100m", "app:1")
	}
	objs := decode(b, strings.Join(docs, "\n---\n"))
	rev := s.Revision()
	b.ResetTimer()
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var ru0, ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		// The peak is sampled: the heap in use, every 10ms, above what it
		// was before the plan.
		stop, peak := make(chan struct{}), make(chan uint64)
		go func() {
			var top uint64
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			for {
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				top = max(top, m.HeapInuse)
				select {
				case <-stop:
					peak <- top
					return
				case <-t.C:
				}
			}
		}()
		start := time.Now()
		rep, err := Run(ctx, s, objs, nil, Options{Clock: clocktesting.NewFakePassiveClock(now)})
		elapsed := time.Since(start)
		close(stop)
		top := <-peak
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		runtime.ReadMemStats(&after)
		if err != nil {
			b.Fatal(err)
		}
		if !rep.Fits || rep.Pods.Created != 5*deployments {
			b.Fatalf("fits %v, pods %+v: %v", rep.Fits, rep.Pods, rep.Failures())
		}
		b.ReportMetric(elapsed.Seconds(), "s/plan")
		// CPU time is what the wall time would be on an idle core: a
		// loaded machine stretches the wall time, not this.
		cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
		b.ReportMetric(cpu.Seconds(), "cpu-s/plan")
		b.ReportMetric(float64(top-min(top, before.HeapInuse))/(1<<20), "MiB-peak-extra/plan")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "MiB-alloc/plan")
	}
	if s.Revision() != rev {
		b.Fatal("the plan wrote to the store")
	}
}

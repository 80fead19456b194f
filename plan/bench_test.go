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

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

// BenchmarkPlan plans a revision of 1,000 Deployments of 5 replicas
// (5,000 pods) against 1,000 nodes holding 30,000 pods. Beside the time
// (wall and CPU) it reports the plan's memory three ways: the heap in use
// above the start at its sampled peak, garbage included; the live heap
// above the start when the plan ends, its fork still open; and, to hold
// them to, the heap one copy of the revision's objects takes.
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
	// What one copy of the changed objects holds in memory: the measure
	// the plan's extra memory is held to.
	var changed uint64
	{
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		copies := make([]api.Object, len(objs))
		for i, d := range objs {
			copies[i] = d.Object.DeepCopyObject().(api.Object)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		runtime.KeepAlive(copies)
		changed = m1.HeapAlloc - min(m1.HeapAlloc, m0.HeapAlloc)
	}
	rev := s.Revision()
	b.ResetTimer()
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var ru0, ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		// The live heap at the end of the plan, its fork still open: a
		// collection there, whose time is taken off the plan's.
		var (
			live        uint64
			measured    time.Duration
			measuredCPU time.Duration
		)
		planned = func() {
			var m runtime.MemStats
			var r0, r1 syscall.Rusage
			start := time.Now()
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
			runtime.GC()
			runtime.ReadMemStats(&m)
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
			live = m.HeapAlloc - min(m.HeapAlloc, before.HeapAlloc)
			measured, measuredCPU = time.Since(start), cpuTime(r1)-cpuTime(r0)
		}
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
		elapsed := time.Since(start) - measured
		planned = nil
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
		cpu := cpuTime(ru1) - cpuTime(ru0) - measuredCPU
		b.ReportMetric(cpu.Seconds(), "cpu-s/plan")
		b.ReportMetric(float64(top-min(top, before.HeapInuse))/(1<<20), "MiB-peak-extra/plan")
		b.ReportMetric(float64(live)/(1<<20), "MiB-live-extra/plan")
		b.ReportMetric(float64(changed)/(1<<20), "MiB-changed-copy")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "MiB-alloc/plan")
	}
	if s.Revision() != rev {
		b.Fatal("the plan wrote to the store")
	}
}

func cpuTime(r syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano()) + time.Duration(r.Stime.Nano())
}

package volume

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// BenchmarkBindStore10k is the whole binder over a real store: 10,000
// volumes and 10,000 claims (the workload of BenchmarkBind10k) are in the
// store when the controller starts, and the time runs until every claim
// is Bound, each binding two store writes.
func BenchmarkBindStore10k(b *testing.B) {
	pvs, _ := bindWorkload()
	claims := bindClaims()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		st, err := store.New(store.Memory{}, store.Options{History: 100_000})
		if err != nil {
			b.Fatal(err)
		}
		ns := &api.Namespace{}
		ns.Name = "default"
		api.Default(ns)
		_, err = st.Txn(context.Background(), func(tx *store.Txn) error {
			if _, err := tx.Create(ns); err != nil {
				return err
			}
			for i := range pvs {
				if _, err := tx.Create(pvs[i].DeepCopy()); err != nil {
					return err
				}
				if _, err := tx.Create(claims[i].DeepCopy()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		rev := st.Revision()
		c := NewController(st, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		w, err := st.Watch(ctx, store.WatchOptions{Kind: claimKind, Revision: rev})
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		b.StartTimer()
		cpu0 := cpuTime()
		wg.Go(func() { _ = c.Run(ctx, 2) })
		for bound := 0; bound < len(claims); {
			e, err := w.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			old, _ := e.Old.(*api.PersistentVolumeClaim)
			if e.Object.(*api.PersistentVolumeClaim).Status.Phase == api.ClaimBound && (old == nil || old.Status.Phase != api.ClaimBound) {
				bound++
			}
		}
		b.StopTimer()
		cpu += cpuTime() - cpu0
		w.Stop()
		cancel()
		wg.Wait()
		st.Close()
	}
	// CPU time says what the binder costs when the machine is shared and
	// wall time says mostly how busy the neighbours are.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bindClaims are the claims of bindWorkload as objects.
func bindClaims() []*api.PersistentVolumeClaim {
	pvs, reqs := bindWorkload()
	out := make([]*api.PersistentVolumeClaim, len(reqs))
	for i, r := range reqs {
		mode := pvs[i].Spec.AccessModes[0]
		c := claimOf(fmt.Sprintf("claim-%05d", i), r.Class, fmt.Sprintf("%d", r.Size), mode)
		c.UID = ""
		out[i] = c
	}
	return out
}

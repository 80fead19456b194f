package controlplane

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// fullDisk is a store backend whose commits fail while full is set, as a
// full disk's do, and that writes again once it has room (the store
// probes it).
type fullDisk struct {
	store.Memory
	full atomic.Bool
}

func (d *fullDisk) Commit(rev uint64, ops []store.Op) error {
	if d.full.Load() {
		return syscall.ENOSPC
	}
	return d.Memory.Commit(rev, ops)
}

func (d *fullDisk) Probe() error {
	if d.full.Load() {
		return syscall.ENOSPC
	}
	return nil
}

// TestSourceStoreErrorRetried: a sync whose store write fails is tried
// again within seconds of the store writing again, with back-off, not at
// the source's next poll an hour later.
func TestSourceStoreErrorRetried(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	disk := &fullDisk{}
	st, err := store.New(disk, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	manifests := t.TempDir()
	write(t, filepath.Join(manifests, "a.yaml"), cm("a", "1"))
	spec, err := source.Parse("name=site,interval=1h," + manifests)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := event.NewWriter(st, event.Options{Clock: clk, Logger: log})
	srcs, err := newSources([]source.Spec{spec}, st, t.TempDir(), clk, log, events.Recorder("test", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	if err := srcs.ensureObjects(ctx); err != nil {
		t.Fatal(err)
	}
	c := srcs.controller(Deps{Clock: clk, Log: log})
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx, 1) })
	defer func() { cancel(); wg.Wait(); srcs.closeAll() }()

	step := func(what string, cond func() error) {
		t.Helper()
		testtool.WaitFor(t, 20*time.Second, what, func() error {
			clk.Step(100 * time.Millisecond)
			return cond()
		})
	}
	step("a applied", func() error { _, err := configData(st, "a"); return err })

	write(t, filepath.Join(manifests, "b.yaml"), cm("b", "1"))
	disk.full.Store(true)
	errorsBefore := c.Stats().Errors
	srcs.Trigger("site")
	step("the sync to fail on the store", func() error {
		if c.Stats().Errors == errorsBefore {
			return errors.New("no failed sync yet")
		}
		return nil
	})
	disk.full.Store(false)
	freed := clk.Now()
	step("b applied once the store writes again", func() error { _, err := configData(st, "b"); return err })
	if took := clk.Since(freed); took > 30*time.Second {
		t.Errorf("the sync was retried %v after the store wrote again; want seconds (the poll is hourly)", took)
	}
}

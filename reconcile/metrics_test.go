package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/testtool"
)

// TestMetricsOfController runs a real controller on a fake clock and reads
// its workqueue and reconcile metrics through the /metrics handler.
func TestMetricsOfController(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

	held, release := make(chan struct{}), make(chan struct{})
	r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		switch key {
		case "bad":
			return Result{}, errors.New("broken")
		case "later":
			return Result{RequeueAfter: time.Hour}, nil
		case "slow":
			held <- struct{}{}
			<-release
		}
		return Result{}, nil
	})
	// A long back-off keeps the failing key from being retried during
	// the test.
	c := NewController("test", r, Options{Clock: clk, Backoff: Backoff{Base: time.Hour}})
	m.Instrument(c)
	for _, key := range []string{"ok", "ok", "bad", "later"} {
		c.Enqueue(key)
	}
	clk.Step(2 * time.Second) // each key waits 2s for a worker
	got := testtool.Scrape(t, h)
	if d := got[`berth_workqueue_depth{name="test"}`]; d != 3 {
		t.Fatalf("depth before the workers start = %v, want 3", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(ctx, 2) })
	defer func() { cancel(); wg.Wait() }()
	eventually(t, "three keys done", func() bool {
		return testtool.Scrape(t, h)[`berth_workqueue_work_duration_seconds_count{name="test"}`] == 3
	})

	c.Enqueue("slow")
	<-held
	clk.Step(5 * time.Second)
	// The queue reads its workers' unfinished work on its clock's ticks.
	eventually(t, "the unfinished work", func() bool {
		return testtool.Scrape(t, h)[`berth_workqueue_unfinished_work_seconds{name="test"}`] == 5
	})
	got = testtool.Scrape(t, h)
	for series, want := range map[string]float64{
		`berth_workqueue_depth{name="test"}`:                             0,
		`berth_workqueue_unfinished_work_seconds{name="test"}`:           5,
		`berth_workqueue_longest_running_processor_seconds{name="test"}`: 5,
	} {
		if got[series] != want {
			t.Errorf("%s = %v while a worker holds a key for 5s, want %v", series, got[series], want)
		}
	}
	close(release)
	eventually(t, "the slow key done", func() bool {
		return testtool.Scrape(t, h)[`berth_workqueue_work_duration_seconds_count{name="test"}`] == 4
	})
	clk.Step(time.Second)
	eventually(t, "no unfinished work", func() bool {
		return testtool.Scrape(t, h)[`berth_workqueue_unfinished_work_seconds{name="test"}`] == 0
	})

	got = testtool.Scrape(t, h)
	for series, want := range map[string]float64{
		`berth_workqueue_adds_total{name="test"}`:                                    4, // "ok" twice while waiting counts once
		`berth_workqueue_retries_total{name="test"}`:                                 2, // "bad" retried, "later" requeued after a time
		`berth_workqueue_queue_duration_seconds_count{name="test"}`:                  4,
		`berth_workqueue_queue_duration_seconds_sum{name="test"}`:                    6, // three keys waited 2s, "slow" none
		`berth_workqueue_work_duration_seconds_sum{name="test"}`:                     5,
		`berth_controller_reconcile_errors_total{controller="test"}`:                 1,
		`berth_controller_reconcile_total{controller="test",result="error"}`:         1,
		`berth_controller_reconcile_total{controller="test",result="success"}`:       2,
		`berth_controller_reconcile_total{controller="test",result="requeue_after"}`: 1,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
}

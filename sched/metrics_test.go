package sched

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

// TestMetrics runs the real scheduler over a memory store on a fake clock
// and reads its metrics through the /metrics handler: a pod bound at once,
// one parked as unschedulable, then bound two seconds later when room is
// freed.
func TestMetrics(t *testing.T) {
	epoch := time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(epoch)
	s := storetest.NewMemory(t)
	create(t, s, makeNode("n", allocatable("1", "1Gi", 110)))
	sc := start(t, s, Options{Clock: clk})
	reg := prometheus.NewRegistry()
	reg.MustRegister(sc.Collector())
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	scrape := func() map[string]float64 { return testtool.Scrape(t, h) }

	create(t, s, makePod("a", requests("1", "")))
	waitPod(t, s, "a", boundTo("n"))
	create(t, s, makePod("b", requests("1", "")))
	waitFor(t, func() bool {
		got := scrape()
		return got[`berth_scheduler_pending_pods{queue="unschedulable"}`] == 1 &&
			got[`berth_scheduler_schedule_attempts_total{result="scheduled"}`] == 1
	})
	got := scrape()
	for series, want := range map[string]float64{
		`berth_scheduler_pending_pods{queue="active"}`:                                      0,
		`berth_scheduler_pending_pods{queue="backoff"}`:                                     0,
		`berth_scheduler_schedule_attempts_total{result="scheduled"}`:                       1,
		`berth_scheduler_schedule_attempts_total{result="unschedulable"}`:                   1,
		`berth_scheduler_schedule_attempts_total{result="error"}`:                           0,
		`berth_scheduler_scheduling_attempt_duration_seconds_count{result="scheduled"}`:     1,
		`berth_scheduler_scheduling_attempt_duration_seconds_count{result="unschedulable"}`: 1,
		`berth_scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"}`:           1,
		`berth_scheduler_pod_scheduling_sli_duration_seconds_sum{attempts="1"}`:             0,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}

	if _, ok := got[`berth_scheduler_pod_scheduling_sli_duration_seconds_count{attempts="2"}`]; ok {
		t.Error("a series for pods bound at their second attempt before any was")
	}

	clk.Step(2 * time.Second) // b's back-off (1s) is over when room is freed
	zero := int64(0)
	if _, err := s.Delete(context.Background(), podKind, "default", "a", store.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s, "b", boundTo("n"))
	waitFor(t, func() bool {
		return scrape()[`berth_scheduler_schedule_attempts_total{result="scheduled"}`] == 2
	})
	got = scrape()
	for series, want := range map[string]float64{
		`berth_scheduler_pending_pods{queue="unschedulable"}`:                           0,
		`berth_scheduler_pod_scheduling_sli_duration_seconds_count{attempts="2"}`:       1,
		`berth_scheduler_pod_scheduling_sli_duration_seconds_sum{attempts="2"}`:         2, // queued at 0s, bound at 2s
		`berth_scheduler_scheduling_attempt_duration_seconds_count{result="scheduled"}`: 2,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
}

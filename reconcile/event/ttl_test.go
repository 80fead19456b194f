package event

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

func TestTTLDeletesEventsLastSeenLongerAgo(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	s := newStore(t, clk)
	r := NewWriter(s, Options{Clock: clk}).Recorder("test", "")
	record(t, s, r, pod("old"), api.EventTypeNormal, "Started", "x")
	clk.Step(30 * time.Minute)
	record(t, s, r, pod("young"), api.EventTypeNormal, "Started", "x")
	clk.Step(20 * time.Minute)
	// Bumped 50m after it was first recorded: it lives on from then.
	record(t, s, r, pod("bumped"), api.EventTypeNormal, "Started", "x")
	clk.Step(-50 * time.Minute)
	record(t, s, r, pod("bumped"), api.EventTypeNormal, "Started", "x")
	clk.Step(50 * time.Minute)

	ttl := NewTTLReconciler(s, time.Hour, clk)
	clk.Step(10*time.Minute + time.Second) // t0 + 1h00m01s
	res, err := ttl.Reconcile(context.Background(), ttlKey)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ev := range events(t, s) {
		names = append(names, ev.InvolvedObject.Name)
	}
	if fmt.Sprint(names) != "[bumped young]" {
		t.Errorf("kept %v, want [bumped young]", names)
	}
	if want := 30*time.Minute - time.Second; res.RequeueAfter != want {
		t.Errorf("RequeueAfter = %v, want %v (when young expires)", res.RequeueAfter, want)
	}
}

func TestTTLControllerOnAFakeClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	s := newStore(t, clk)
	r := NewWriter(s, Options{Clock: clk}).Recorder("test", "")
	record(t, s, r, pod("a"), api.EventTypeNormal, "Started", "x")
	c := NewTTLController(s, TTLOptions{TTL: time.Hour, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx, 1) })
	defer func() { cancel(); wg.Wait() }()
	// The first pass finds nothing due and waits for the event's expiry:
	// a timer beside the work queue's two tickers.
	testtool.WaitFor(t, 5*time.Second, "the first pass", func() error {
		if c.Stats().Reconciles == 0 || clk.Waiters() != 3 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	if n := len(events(t, s)); n != 1 {
		t.Fatalf("%d events before the TTL", n)
	}
	clk.Step(time.Hour)
	testtool.WaitFor(t, 5*time.Second, "the event's deletion", func() error {
		if n := len(events(t, s)); n != 0 {
			return fmt.Errorf("%d events", n)
		}
		return nil
	})
}

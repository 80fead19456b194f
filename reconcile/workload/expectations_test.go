package workload

import (
	"errors"
	"sync"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(epoch)
	e := NewExpectations(clk)
	if !e.Satisfied("ns/a") {
		t.Fatal("nothing expected yet, but not satisfied")
	}
	e.ExpectCreations("ns/a", 2)
	if e.Satisfied("ns/a") {
		t.Fatal("satisfied with two creations outstanding")
	}
	e.CreationObserved("ns/a")
	if e.Satisfied("ns/a") {
		t.Fatal("satisfied with one creation outstanding")
	}
	e.CreationObserved("ns/a")
	if !e.Satisfied("ns/a") {
		t.Fatal("not satisfied once both creations were observed")
	}
	e.CreationObserved("ns/a") // a relist: never below zero
	e.ExpectDeletions("ns/a", []string{"ns/p1", "ns/p2"})
	e.DeletionObserved("ns/a", "ns/p1")
	e.DeletionObserved("ns/a", "ns/p1") // marked, then gone: counts once
	if e.Satisfied("ns/a") {
		t.Fatal("satisfied with p2's deletion outstanding")
	}
	clk.SetTime(epoch.Add(ExpectationsTimeout + 1))
	if !e.Satisfied("ns/a") {
		t.Fatal("expectations did not expire")
	}
	e.Forget("ns/a")
	if !e.Satisfied("ns/a") {
		t.Fatal("not satisfied after Forget")
	}
}

func TestSlowStartBatch(t *testing.T) {
	tests := []struct {
		name      string
		count     int
		failAt    int // 1-based call that fails; 0 for none
		wantOK    int
		wantCalls int
	}{
		{name: "none", count: 0, wantOK: 0, wantCalls: 0},
		{name: "all succeed", count: 10, wantOK: 10, wantCalls: 10},
		{name: "first call fails", count: 10, failAt: 1, wantOK: 0, wantCalls: 1},
		// Batches 1, 2, 4: the fourth call is in the third batch, which
		// runs whole, then nothing more.
		{name: "failure in third batch", count: 20, failAt: 4, wantOK: 6, wantCalls: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				calls int
			)
			ok, err := slowStartBatch(tt.count, 1, func() error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls == tt.failAt {
					return errors.New("boom")
				}
				return nil
			})
			if ok != tt.wantOK || calls != tt.wantCalls {
				t.Errorf("successes %d, calls %d; want %d, %d", ok, calls, tt.wantOK, tt.wantCalls)
			}
			if (err != nil) != (tt.failAt != 0) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

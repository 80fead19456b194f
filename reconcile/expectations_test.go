package workload

import (
	"errors"
	"slices"
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
		name        string
		count       int
		failAt      int // 1-based item whose creation fails; 0 for none
		wantOK      int
		wantBatches []int
	}{
		{name: "none", count: 0, wantOK: 0},
		{name: "all succeed", count: 10, wantOK: 10, wantBatches: []int{1, 2, 4, 3}},
		{name: "first item fails", count: 10, failAt: 1, wantOK: 0, wantBatches: []int{1}},
		// Batches 1, 2, 4: the fourth item is the first of the third
		// batch, which stops there, and nothing more is tried.
		{name: "failure in third batch", count: 20, failAt: 4, wantOK: 3, wantBatches: []int{1, 2, 4}},
		{name: "failure inside a batch", count: 20, failAt: 6, wantOK: 5, wantBatches: []int{1, 2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var batches []int
			made := 0
			ok, err := slowStartBatch(tt.count, 1, func(n int) (int, error) {
				batches = append(batches, n)
				for i := range n {
					if made+1 == tt.failAt {
						return i, errors.New("boom")
					}
					made++
				}
				return n, nil
			})
			if ok != tt.wantOK || !slices.Equal(batches, tt.wantBatches) {
				t.Errorf("successes %d, batches %v; want %d, %v", ok, batches, tt.wantOK, tt.wantBatches)
			}
			if (err != nil) != (tt.failAt != 0) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

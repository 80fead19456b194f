package workload

import (
	"errors"
	"slices"
	"testing"
)

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

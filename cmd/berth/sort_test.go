package main

import (
	"encoding/json"
	"testing"
)

func TestCompareSortKeys(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want int
	}{
		{nil, "a", -1},
		{"a", nil, 1},
		{nil, nil, 0},
		{json.Number("9"), json.Number("10"), -1},
		{json.Number("2.5"), json.Number("2.5"), 0},
		{"100m", "2", -1}, // quantities
		{"2Gi", "1500Mi", 1},
		{"web-2", "web-10", -1}, // natural order
		{"web-10", "web-2", 1},
		{"web-007", "web-7", 0},
		{"a", "ab", -1},
		{"node-b", "node-a", 1},
		{"2026-11-30T09:00:00Z", "2026-11-30T10:00:00Z", -1},
		{false, true, -1},
		{json.Number("3"), "3x", -1}, // mixed: as text
	} {
		if got := compareSortKeys(tc.a, tc.b); got != tc.want {
			t.Errorf("compareSortKeys(%#v, %#v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

package pods

import (
	"testing"
	"time"
)

func TestNextBackOff(t *testing.T) {
	tests := []struct {
		prev, ranFor, want time.Duration
	}{
		{0, 0, 10 * time.Second},
		{0, time.Hour, 10 * time.Second},
		{10 * time.Second, time.Second, 20 * time.Second},
		{20 * time.Second, time.Second, 40 * time.Second},
		{160 * time.Second, time.Second, 300 * time.Second},
		{300 * time.Second, time.Second, 300 * time.Second},
		{300 * time.Second, 9*time.Minute + 59*time.Second, 300 * time.Second},
		{300 * time.Second, 10 * time.Minute, 10 * time.Second},
		{40 * time.Second, 11 * time.Minute, 10 * time.Second},
	}
	for _, tt := range tests {
		if got := nextBackOff(tt.prev, tt.ranFor); got != tt.want {
			t.Errorf("nextBackOff(%s, %s) = %s, want %s", tt.prev, tt.ranFor, got, tt.want)
		}
	}
}

func TestNextVolumeBackOff(t *testing.T) {
	var got []time.Duration
	d := time.Duration(0)
	for range 7 {
		d = nextVolumeBackOff(d)
		got = append(got, d)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("volume back-off %v, want %v", got, want)
		}
	}
}

package agent

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

package table

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAge(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{-5 * time.Second, "<invalid>"}, // a clock ahead of ours
		{-1 * time.Second, "0s"},
		{0, "0s"},
		{5 * time.Second, "5s"},
		{119 * time.Second, "119s"},
		{2 * time.Minute, "2m"},
		{2*time.Minute + 30*time.Second, "2m30s"},
		{3 * time.Minute, "3m"},
		{9*time.Minute + 59*time.Second, "9m59s"},
		{10*time.Minute + 30*time.Second, "10m"},
		{179 * time.Minute, "179m"},
		{3 * time.Hour, "3h"},
		{3*time.Hour + 15*time.Minute, "3h15m"},
		{7*time.Hour + 59*time.Minute, "7h59m"},
		{8*time.Hour + 30*time.Minute, "8h"},
		{47 * time.Hour, "47h"},
		{48 * time.Hour, "2d"},
		{4*24*time.Hour + 5*time.Hour, "4d5h"},
		{8 * 24 * time.Hour, "8d"},
		{25 * 24 * time.Hour, "25d"},
		{729 * 24 * time.Hour, "729d"},
		{(2*365 + 3) * 24 * time.Hour, "2y3d"},
		{3 * 365 * 24 * time.Hour, "3y"},
		{9 * 365 * 24 * time.Hour, "9y"},
	}
	for _, tt := range tests {
		got := Age(metav1.NewTime(now.Add(-tt.ago)), now)
		if got != tt.want {
			t.Errorf("Age(%v ago) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	if got := Age(metav1.Time{}, now); got != "<unknown>" {
		t.Errorf("Age(zero) = %q, want <unknown>", got)
	}
}

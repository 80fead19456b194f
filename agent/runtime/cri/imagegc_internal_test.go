package cri

import (
	"slices"
	"testing"
	"time"
)

func TestImagesToFree(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	p := ImageGCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
	images := []gcImage{
		{id: "used", size: 30, firstSeen: old, lastUsed: now, inUse: true},
		{id: "pause", size: 30, firstSeen: old, keep: true},
		{id: "young", size: 30, firstSeen: now.Add(-time.Minute)},
		{id: "used-long-ago", size: 10, firstSeen: old, lastUsed: now.Add(-50 * time.Minute)},
		{id: "used-lately", size: 10, firstSeen: old, lastUsed: now.Add(-time.Minute)},
		{id: "never-used", size: 10, firstSeen: old},
		{id: "never-used-older", size: 10, firstSeen: old.Add(-time.Hour)},
	}
	for _, tc := range []struct {
		name                string
		capacity, available uint64
		policy              ImageGCPolicy
		want                []string
	}{
		{"under the high threshold", 1000, 160, p, nil},
		// 85% full: down to 80% is 50 bytes, five images of 10.
		{"at the high threshold", 1000, 150, p, []string{"never-used-older", "never-used", "used-long-ago", "used-lately"}},
		// 15 bytes to free: the two least recently used images.
		{"a little over the low one", 1000, 935, ImageGCPolicy{HighThresholdPercent: 6, LowThresholdPercent: 5, MinAge: 2 * time.Minute}, []string{"never-used-older", "never-used"}},
		{"disabled at 100", 1000, 0, ImageGCPolicy{HighThresholdPercent: 100, LowThresholdPercent: 80}, nil},
		{"no minimum age takes the young one too", 1000, 0, ImageGCPolicy{HighThresholdPercent: 1, LowThresholdPercent: 0}, []string{"never-used-older", "never-used", "young", "used-long-ago", "used-lately"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, im := range imagesToFree(images, tc.capacity, tc.available, tc.policy, now) {
				got = append(got, im.id)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestImageGCPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p    ImageGCPolicy
		want string
	}{
		{ImageGCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80}, ""},
		{ImageGCPolicy{HighThresholdPercent: 100, LowThresholdPercent: 100}, ""},
		{ImageGCPolicy{HighThresholdPercent: 101, LowThresholdPercent: 80}, "--image-gc-high-threshold 101: want 0 to 100"},
		{ImageGCPolicy{HighThresholdPercent: 85, LowThresholdPercent: -1}, "--image-gc-low-threshold -1: want 0 to 100"},
		{ImageGCPolicy{HighThresholdPercent: 80, LowThresholdPercent: 80}, "--image-gc-low-threshold 80 must be below --image-gc-high-threshold 80"},
		{ImageGCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Second}, "--minimum-image-ttl-duration -1s: negative"},
	} {
		err := tc.p.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
}

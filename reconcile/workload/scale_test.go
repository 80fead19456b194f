package workload

import (
	"maps"
	"testing"
	"time"
)

// TestProportionalScale mirrors the cases of Kubernetes' TestScale: the
// ReplicaSets were last scaled for the Deployment's old replicas (and
// surge), which now change.
func TestProportionalScale(t *testing.T) {
	newer, old, older := epoch, epoch.Add(-time.Hour), epoch.Add(-2*time.Hour)
	rs := func(name string, replicas int32, created time.Time) ScaleRS {
		return ScaleRS{RSCounts: RSCounts{Name: name, Created: created, Replicas: replicas, Available: replicas}}
	}
	tests := []struct {
		name               string
		replicas, surge    int32
		oldReplicas        int32 // and the old surge, if oldSurge
		oldSurge           int32
		recreate           bool
		newRS              *ScaleRS
		oldRSs             []ScaleRS
		want               map[string]int32
		unavailableInNewRS bool
	}{
		{name: "normal scaling event: 10 -> 12", replicas: 12, oldReplicas: 10,
			newRS: new(rs("v1", 10, newer)), want: map[string]int32{"v1": 12}},
		{name: "normal scaling event: 10 -> 5", replicas: 5, oldReplicas: 10,
			newRS: new(rs("v1", 10, newer)), want: map[string]int32{"v1": 5}},
		{name: "proportional scaling: 5 -> 10", replicas: 10, oldReplicas: 5,
			newRS: new(rs("v2", 2, newer)), oldRSs: []ScaleRS{rs("v1", 3, old)},
			want: map[string]int32{"v2": 4, "v1": 6}},
		{name: "proportional scaling: 5 -> 3", replicas: 3, oldReplicas: 5,
			newRS: new(rs("v2", 2, newer)), oldRSs: []ScaleRS{rs("v1", 3, old)},
			want: map[string]int32{"v2": 1, "v1": 2}},
		{name: "proportional scaling: 9 -> 4", replicas: 4, oldReplicas: 9,
			newRS: new(rs("v2", 8, newer)), oldRSs: []ScaleRS{rs("v1", 1, old)},
			want: map[string]int32{"v2": 4, "v1": 0}},
		{name: "proportional scaling: 7 -> 10", replicas: 10, oldReplicas: 7,
			newRS: new(rs("v3", 2, newer)), oldRSs: []ScaleRS{rs("v2", 3, old), rs("v1", 2, older)},
			want: map[string]int32{"v3": 3, "v2": 4, "v1": 3}},
		{name: "proportional scaling: 13 -> 8", replicas: 8, oldReplicas: 13,
			newRS: new(rs("v3", 2, newer)), oldRSs: []ScaleRS{rs("v2", 8, old), rs("v1", 3, older)},
			want: map[string]int32{"v3": 1, "v2": 5, "v1": 2}},
		{name: "leftover distribution: 3 -> 4 scales up the new one", replicas: 4, oldReplicas: 3,
			newRS: new(rs("v3", 1, newer)), oldRSs: []ScaleRS{rs("v2", 1, old), rs("v1", 1, older)},
			want: map[string]int32{"v3": 2, "v2": 1, "v1": 1}},
		{name: "leftover distribution: 3 -> 2 scales down the oldest", replicas: 2, oldReplicas: 3,
			newRS: new(rs("v3", 1, newer)), oldRSs: []ScaleRS{rs("v2", 1, old), rs("v1", 1, older)},
			want: map[string]int32{"v3": 1, "v2": 1, "v1": 0}},
		{name: "proportional scaling (no new rs): 4 -> 5", replicas: 5, oldReplicas: 4,
			oldRSs: []ScaleRS{rs("v2", 2, old), rs("v1", 2, older)},
			want:   map[string]int32{"v2": 3, "v1": 2}},
		{name: "proportional scaling: 6 -> 0", replicas: 0, oldReplicas: 6,
			newRS: new(rs("v3", 3, newer)), oldRSs: []ScaleRS{rs("v2", 2, old), rs("v1", 1, older)},
			want: map[string]int32{"v3": 0, "v2": 0, "v1": 0}},
		{name: "proportional scaling: 0 -> 6 scales the newest", replicas: 6, oldReplicas: 6,
			newRS: new(rs("v3", 0, newer)), oldRSs: []ScaleRS{rs("v2", 0, old), rs("v1", 0, older)},
			want: map[string]int32{"v3": 6}},
		{name: "deployment with surge pods", replicas: 20, surge: 2, oldReplicas: 10, oldSurge: 2,
			newRS: new(rs("v2", 6, newer)), oldRSs: []ScaleRS{rs("v1", 6, old)},
			want: map[string]int32{"v2": 11, "v1": 11}},
		{name: "change both surge and size", replicas: 50, surge: 6, oldReplicas: 10, oldSurge: 3,
			newRS: new(rs("v2", 5, newer)), oldRSs: []ScaleRS{rs("v1", 8, old)},
			want: map[string]int32{"v2": 22, "v1": 34}},
		{name: "change both size and template", replicas: 14, oldReplicas: 10,
			oldRSs: []ScaleRS{rs("v2", 7, newer), rs("v1", 3, old)},
			want:   map[string]int32{"v2": 10, "v1": 4}},
		{name: "saturated but broken new replica set does not affect old pods", replicas: 2, surge: 1, oldReplicas: 2, oldSurge: 1,
			newRS: new(rs("v2", 2, newer)), oldRSs: []ScaleRS{rs("v1", 1, old)}, unavailableInNewRS: true,
			want: map[string]int32{"v2": 2, "v1": 1}},
		{name: "a saturated new replica set leaves the old ones none", replicas: 2, surge: 1, oldReplicas: 2, oldSurge: 1,
			newRS: new(rs("v2", 2, newer)), oldRSs: []ScaleRS{rs("v1", 1, old)},
			want: map[string]int32{"v1": 0}},
		{name: "Recreate with two active replica sets is left alone", replicas: 8, oldReplicas: 4, recreate: true,
			newRS: new(rs("v2", 1, newer)), oldRSs: []ScaleRS{rs("v1", 3, old)},
			want: nil},
		// The QA case: 4, maxSurge 1, maxUnavailable 0, a new template that
		// never becomes ready, scaled to 8, then to 2.
		{name: "4 -> 8 mid-rollout", replicas: 8, surge: 1, oldReplicas: 4, oldSurge: 1,
			newRS: new(rs("v2", 1, newer)), oldRSs: []ScaleRS{rs("v1", 4, old)}, unavailableInNewRS: true,
			want: map[string]int32{"v2": 2, "v1": 7}},
		{name: "8 -> 2 mid-rollout", replicas: 2, surge: 1, oldReplicas: 8, oldSurge: 1,
			newRS: new(rs("v2", 2, newer)), oldRSs: []ScaleRS{rs("v1", 7, old)}, unavailableInNewRS: true,
			want: map[string]int32{"v2": 1, "v1": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			annotate := func(r ScaleRS) ScaleRS {
				r.Desired, r.HasDesired, r.MaxReplicas = tt.oldReplicas, true, tt.oldReplicas+tt.oldSurge
				return r
			}
			s := Scaling{Replicas: tt.replicas, MaxSurge: tt.surge, RollingUpdate: !tt.recreate, StatusReplicas: tt.oldReplicas}
			for _, r := range tt.oldRSs {
				s.Old = append(s.Old, annotate(r))
			}
			if tt.newRS != nil {
				n := annotate(*tt.newRS)
				if tt.unavailableInNewRS {
					n.Available = 0
				}
				s.New = &n
			}
			if got := ProportionalScale(s); !maps.Equal(got, tt.want) {
				t.Errorf("ProportionalScale = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFraction mirrors Kubernetes' TestGetReplicaSetFraction.
func TestFraction(t *testing.T) {
	tests := []struct {
		name               string
		replicas, surge    int32
		rsReplicas, maxAnn int32
		statusReplicas     int32
		want               int32
	}{
		{name: "scaling down to zero takes it all", replicas: 0, rsReplicas: 10, maxAnn: 10, want: -10},
		{name: "scaling up by half", replicas: 15, rsReplicas: 10, maxAnn: 10, want: 5},
		{name: "the surge counts", replicas: 10, surge: 5, rsReplicas: 10, maxAnn: 10, want: 5},
		{name: "no annotation: status.replicas", replicas: 20, rsReplicas: 10, statusReplicas: 10, want: 10},
		{name: "no annotation and no status: nothing", replicas: 20, rsReplicas: 10, want: 0},
		{name: "rounded", replicas: 9, rsReplicas: 8, maxAnn: 13, want: -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := ScaleRS{RSCounts: RSCounts{Name: "a", Replicas: tt.rsReplicas}, MaxReplicas: tt.maxAnn}
			s := Scaling{Replicas: tt.replicas, MaxSurge: tt.surge, StatusReplicas: tt.statusReplicas}
			if got := fraction(rs, s); got != tt.want {
				t.Errorf("fraction = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestIsScalingEvent(t *testing.T) {
	active := ScaleRS{RSCounts: RSCounts{Name: "a", Replicas: 3}, Desired: 3, HasDesired: true}
	idle := ScaleRS{RSCounts: RSCounts{Name: "b"}, Desired: 1, HasDesired: true}
	unannotated := ScaleRS{RSCounts: RSCounts{Name: "c", Replicas: 2}}
	tests := []struct {
		name string
		s    Scaling
		want bool
	}{
		{"scaled for replicas", Scaling{Replicas: 3, New: &active}, false},
		{"replicas changed", Scaling{Replicas: 5, New: &active}, true},
		{"an idle replica set does not count", Scaling{Replicas: 3, New: &active, Old: []ScaleRS{idle}}, false},
		{"nor one never annotated", Scaling{Replicas: 3, Old: []ScaleRS{unannotated}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsScalingEvent(tt.s); got != tt.want {
				t.Errorf("IsScalingEvent = %v, want %v", got, tt.want)
			}
		})
	}
}

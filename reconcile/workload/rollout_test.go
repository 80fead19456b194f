package workload

import (
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolveFenceposts(t *testing.T) {
	i := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	p := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	tests := []struct {
		name                      string
		surge, unavailable        *intstr.IntOrString
		desired                   int32
		wantSurge, wantUnavailabl int32
		wantErr                   bool
	}{
		{"defaults of 10", p("25%"), p("25%"), 10, 3, 2, false},
		{"defaults of 3", p("25%"), p("25%"), 3, 1, 0, false},
		{"defaults of 1", p("25%"), p("25%"), 1, 1, 0, false},
		{"both zero numbers", i(0), i(0), 5, 0, 1, false},
		{"both zero percent", p("0%"), p("0%"), 10, 0, 1, false},
		{"both nil", nil, nil, 10, 0, 1, false},
		{"numbers", i(2), i(1), 10, 2, 1, false},
		{"percent rounds surge up, unavailable down", p("10%"), p("10%"), 15, 2, 1, false},
		{"zero replicas", p("25%"), p("25%"), 0, 0, 1, false},
		{"not a percentage", p("lots"), i(1), 10, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u, err := ResolveFenceposts(tt.surge, tt.unavailable, tt.desired)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (s != tt.wantSurge || u != tt.wantUnavailabl) {
				t.Errorf("surge %d unavailable %d, want %d %d", s, u, tt.wantSurge, tt.wantUnavailabl)
			}
		})
	}
}

func TestRollingStep(t *testing.T) {
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name    string
		in      Rollout
		wantNew int32
		wantOld map[string]int32
	}{
		{
			name:    "a new rollout surges the new ReplicaSet",
			in:      Rollout{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2, Old: []RSCounts{{Name: "a", Replicas: 10, Available: 10}}},
			wantNew: 3,
		},
		{
			name: "surge used up: old scaled down to replicas-maxUnavailable available",
			in: Rollout{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2,
				New: RSCounts{Name: "n", Replicas: 3}, Old: []RSCounts{{Name: "a", Replicas: 10, Available: 10}}},
			wantNew: 3, wantOld: map[string]int32{"a": 8},
		},
		{
			name: "room again: the new one grows by what the old gave back",
			in: Rollout{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2,
				New: RSCounts{Name: "n", Replicas: 3, Available: 3}, Old: []RSCounts{{Name: "a", Replicas: 8, Available: 8}}},
			wantNew: 5,
		},
		{
			name: "unhealthy old pods go first, oldest ReplicaSet first, within the budget",
			in: Rollout{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2,
				New: RSCounts{Name: "n", Replicas: 3},
				Old: []RSCounts{
					{Name: "b", Created: at(2), Replicas: 5, Available: 5},
					{Name: "a", Created: at(1), Replicas: 5, Available: 2},
				}},
			wantNew: 3, wantOld: map[string]int32{"a": 3},
		},
		{
			name: "no budget while the new pods are unavailable",
			in: Rollout{Replicas: 4, MaxSurge: 1, MaxUnavailable: 0,
				New: RSCounts{Name: "n", Replicas: 1}, Old: []RSCounts{{Name: "a", Replicas: 4, Available: 4}}},
			wantNew: 1,
		},
		{
			name: "healthy old pods scaled down oldest first across ReplicaSets",
			in: Rollout{Replicas: 4, MaxSurge: 1, MaxUnavailable: 1,
				New: RSCounts{Name: "n", Replicas: 2, Available: 2},
				Old: []RSCounts{
					{Name: "b", Created: at(2), Replicas: 2, Available: 2},
					{Name: "a", Created: at(1), Replicas: 1, Available: 1},
				}},
			wantNew: 2, wantOld: map[string]int32{"a": 0, "b": 1},
		},
		{
			name:    "a new ReplicaSet above replicas is scaled down",
			in:      Rollout{Replicas: 3, MaxSurge: 1, MaxUnavailable: 0, New: RSCounts{Name: "n", Replicas: 5, Available: 5}},
			wantNew: 3,
		},
		{
			name:    "complete: nothing to do",
			in:      Rollout{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2, New: RSCounts{Name: "n", Replicas: 10, Available: 10}, Old: []RSCounts{{Name: "a"}}},
			wantNew: 10,
		},
		{
			name: "one replica, no surge: the old pod goes first",
			in: Rollout{Replicas: 1, MaxSurge: 0, MaxUnavailable: 1,
				New: RSCounts{Name: "n"}, Old: []RSCounts{{Name: "a", Replicas: 1, Available: 1}}},
			wantNew: 0, wantOld: map[string]int32{"a": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RollingStep(tt.in)
			if got.NewReplicas != tt.wantNew {
				t.Errorf("new replicas %d, want %d", got.NewReplicas, tt.wantNew)
			}
			if len(got.Old) != 0 || len(tt.wantOld) != 0 {
				if !maps.Equal(got.Old, tt.wantOld) {
					t.Errorf("old %v, want %v", got.Old, tt.wantOld)
				}
			}
		})
	}
}

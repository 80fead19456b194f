package sched

import (
	"testing"

	"github.com/berth-dev/berth/api"
)

// Expected: 100 * (1 - |cpu fraction - memory fraction| / 2), truncated.
func TestBalancedAllocation(t *testing.T) {
	tests := []struct {
		name string
		node *NodeInfo
		pod  *api.Pod
		want int64
	}{
		// 0.75 and 0.5: std 0.125, 87.5
		{"uneven", placed(makeNode("n", allocatable("4", "10000", 110))), makePod("p", requests("3", "5000")), 87},
		// 0.5 and 0.5
		{"even", placed(makeNode("n", allocatable("6", "10000", 110))), makePod("p", requests("3", "5000")), 100},
		// placed 1000m/1000 plus the pod's 1000m/4000: 0.5 and 0.5
		{"counts placed pods", placed(makeNode("n", allocatable("4", "10000", 110)), makePod("a", requests("1", "1000"))), makePod("p", requests("1", "4000")), 100},
		// cpu 5/4 is clamped to 1; memory 0.5: std 0.25
		{"clamped", placed(makeNode("n", allocatable("4", "10000", 110))), makePod("p", requests("5", "5000")), 75},
		// only cpu requested: 0.5 and 0 (real requests, not the defaults)
		{"cpu only", placed(makeNode("n", allocatable("4", "10000", 110))), makePod("p", requests("2", "")), 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (balancedAllocation{}).Score(nil, NewPodInfo(tt.pod), tt.node); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	if !(balancedAllocation{}).SkipScore(nil, NewPodInfo(makePod("p"))) {
		t.Error("a pod that requests nothing should skip BalancedAllocation")
	}
}

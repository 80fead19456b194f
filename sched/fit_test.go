package sched

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
)

func TestPodRequests(t *testing.T) {
	withInit := func(cpu, memory string) func(*api.Pod) {
		return func(p *api.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, api.Container{Name: "init", Resources: api.ResourceRequirements{
				Requests: api.ResourceList{api.ResourceCPU: resource.MustParse(cpu), api.ResourceMemory: resource.MustParse(memory)},
			}})
		}
	}
	second := func(cpu string) func(*api.Pod) {
		return func(p *api.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "c2", Resources: api.ResourceRequirements{
				Requests: api.ResourceList{api.ResourceCPU: resource.MustParse(cpu)},
			}})
		}
	}
	tests := []struct {
		name         string
		pod          *api.Pod
		want         Resources
		nzCPU, nzMem int64
		bestEffort   bool
	}{
		{"nothing requested", makePod("p"), Resources{Pods: 1}, 100, 200 << 20, true},
		{"one container", makePod("p", requests("250m", "1Gi")), Resources{MilliCPU: 250, Memory: 1 << 30, Pods: 1}, 250, 1 << 30, false},
		// cpu 250m+500m, memory from the first only; the second container's
		// missing memory request counts 200Mi when scoring.
		{"containers add up", makePod("p", requests("250m", "1Gi"), second("500m")), Resources{MilliCPU: 750, Memory: 1 << 30, Pods: 1}, 750, 1<<30 + 200<<20, false},
		// max(sum of containers, any init container), per resource
		{"init container larger", makePod("p", requests("250m", "1Gi"), withInit("2", "512Mi")), Resources{MilliCPU: 2000, Memory: 1 << 30, Pods: 1}, 2000, 1 << 30, false},
		{"explicit zero is not missing", makePod("p", requests("0", "0")), Resources{Pods: 1}, 0, 0, true},
		{"ephemeral storage", makePod("p", ephemeral("1Gi")), Resources{EphemeralStorage: 1 << 30, Pods: 1}, 100, 200 << 20, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPodInfo(tt.pod)
			if p.Requests != tt.want || p.NonZeroCPU != tt.nzCPU || p.NonZeroMemory != tt.nzMem || p.BestEffort != tt.bestEffort {
				t.Errorf("got %+v nz (%d, %d) bestEffort %v, want %+v nz (%d, %d) bestEffort %v",
					p.Requests, p.NonZeroCPU, p.NonZeroMemory, p.BestEffort, tt.want, tt.nzCPU, tt.nzMem, tt.bestEffort)
			}
		})
	}
}

func TestResourcesFitFilter(t *testing.T) {
	// 4 cpu, 16Gi, 100Gi ephemeral, 110 pods; 3 cpu and 10Gi taken.
	busy := func() *NodeInfo {
		return placed(makeNode("n"), makePod("a", requests("2", "6Gi")), makePod("b", requests("1", "4Gi")))
	}
	full := placed(makeNode("n", allocatable("4", "16Gi", 2)), makePod("a"), makePod("b"))
	tests := []struct {
		name string
		node *NodeInfo
		pod  *api.Pod
		want string
	}{
		{"fits exactly", busy(), makePod("p", requests("1", "6Gi")), ""},
		{"cpu short", busy(), makePod("p", requests("1001m", "1Gi")), "[Insufficient cpu]"},
		{"memory short", busy(), makePod("p", requests("100m", "7Gi")), "[Insufficient memory]"},
		{"both short, both reasons", busy(), makePod("p", requests("2", "7Gi")), "[Insufficient cpu Insufficient memory]"},
		{"ephemeral short", busy(), makePod("p", ephemeral("101Gi")), "[Insufficient ephemeral-storage]"},
		{"pod count", full, makePod("p"), "[Too many pods]"},
		{"pod count and cpu", full, makePod("p", requests("5", "")), "[Too many pods Insufficient cpu]"},
		{"nothing requested fits a full cpu", placed(makeNode("n"), makePod("a", requests("4", ""))), makePod("p"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonsOf(resourcesFit{}.Filter(nil, NewPodInfo(tt.pod), tt.node)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The expected scores are worked by hand from kube-scheduler's formulas:
// least: (capacity - requested) * 100 / capacity per resource, averaged;
// most: requested * 100 / capacity, capped at 100.
func TestAllocationScores(t *testing.T) {
	tests := []struct {
		name        string
		node        *NodeInfo
		pod         *api.Pod
		least, most int64
	}{
		// cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50
		{"small node", placed(makeNode("n", allocatable("4", "10000", 110))), makePod("p", requests("3", "5000")), 37, 62},
		// cpu 50, memory 50
		{"large node", placed(makeNode("n", allocatable("6", "10000", 110))), makePod("p", requests("3", "5000")), 50, 50},
		// the defaults: cpu (1000-100)*100/1000 = 90, memory (1000Mi-200Mi)*100/1000Mi = 80
		{"no requests count the defaults", placed(makeNode("n", allocatable("1", "1000Mi", 110))), makePod("p"), 85, 15},
		// existing 2000m/5000 + pod 1000m/2000: cpu (4000-3000)*100/4000 = 25,
		// memory (10000-7000)*100/10000 = 30
		{"with pods placed", placed(makeNode("n", allocatable("4", "10000", 110)), makePod("a", requests("2", "5000"))), makePod("p", requests("1", "2000")), 27, 72},
		// cpu over-committed: least gives it 0, most caps it at 100
		{"over-committed", placed(makeNode("n", allocatable("1", "10000", 110))), makePod("p", requests("2", "5000")), 25, 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPodInfo(tt.pod)
			if got := (leastAllocated{}).Score(nil, p, tt.node); got != tt.least {
				t.Errorf("LeastAllocated = %d, want %d", got, tt.least)
			}
			if got := (mostAllocated{}).Score(nil, p, tt.node); got != tt.most {
				t.Errorf("MostAllocated = %d, want %d", got, tt.most)
			}
		})
	}
}

// percentOf must equal the integer division it replaces.
func TestPercentOf(t *testing.T) {
	caps := []int64{1, 3, 7, 100, 999, 1000, 4000, 6000, 32000, 1 << 30, 3 << 30, 128 << 30, 1<<40 + 7}
	for _, c := range caps {
		sc := scale(c)
		for _, x := range []int64{0, 1, c / 3, c / 2, c - 1, c, c/7 + 1, c / 100, c/100 + 1} {
			if x < 0 || x > c {
				continue
			}
			if got, want := percentOf(x, c, sc), x*100/c; got != want {
				t.Errorf("percentOf(%d, %d) = %d, want %d", x, c, got, want)
			}
		}
	}
}

package pods

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
)

func TestOOMScoreAdj(t *testing.T) {
	const gi = int64(1) << 30
	tests := []struct {
		name     string
		qos      api.QOSClass
		request  int64
		capacity int64
		want     int
	}{
		{"guaranteed", api.QOSGuaranteed, gi, 4 * gi, -997},
		{"best effort", api.QOSBestEffort, 0, 4 * gi, 1000},
		{"burstable quarter", api.QOSBurstable, gi, 4 * gi, 750},
		{"burstable no request", api.QOSBurstable, 0, 4 * gi, 999},
		{"burstable all memory", api.QOSBurstable, 4 * gi, 4 * gi, 2},
		{"burstable over capacity", api.QOSBurstable, 8 * gi, 4 * gi, 2},
		{"burstable nearly all", api.QOSBurstable, 4*gi - 1, 4 * gi, 2},
		{"burstable unknown capacity", api.QOSBurstable, gi, 0, 999},
	}
	for _, tt := range tests {
		if got := oomScoreAdj(tt.qos, tt.request, tt.capacity); got != tt.want {
			t.Errorf("%s: oomScoreAdj = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestContainerLimits(t *testing.T) {
	c := &api.Container{Resources: api.ResourceRequirements{Limits: api.ResourceList{
		api.ResourceCPU: resource.MustParse("1.5"), api.ResourceMemory: resource.MustParse("64Mi"),
	}}}
	l := containerLimits(c)
	if l.MilliCPU != 1500 || l.MemoryBytes != 64<<20 {
		t.Errorf("containerLimits = %+v", l)
	}
	if l := containerLimits(&api.Container{}); l.MilliCPU != 0 || l.MemoryBytes != 0 {
		t.Errorf("no limits: %+v", l)
	}
}

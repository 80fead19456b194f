package pods

import (
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// oom_score_adj values of the kubelet, so the kernel's OOM killer picks
// victims in the same order eviction would.
const (
	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
)

// oomScoreAdj is a container's oom_score_adj: Guaranteed pods last,
// BestEffort first, Burstable by the share of the node's memory the
// container requests (more requested, less likely killed), kept within
// [2, 999] so a Burstable container always ranks between the other two.
func oomScoreAdj(qos api.QOSClass, memoryRequest, memoryCapacity int64) int {
	switch qos {
	case api.QOSGuaranteed:
		return guaranteedOOMScoreAdj
	case api.QOSBestEffort:
		return bestEffortOOMScoreAdj
	}
	score := 1000
	if memoryCapacity > 0 {
		score = int(1000 - (1000*memoryRequest)/memoryCapacity)
	}
	return min(max(score, 2), 999)
}

// containerLimits are the limits a runtime enforces for c.
func containerLimits(c *api.Container) runtime.Limits {
	var l runtime.Limits
	if q, ok := c.Resources.Limits[api.ResourceCPU]; ok {
		l.MilliCPU = q.MilliValue()
	}
	if q, ok := c.Resources.Limits[api.ResourceMemory]; ok {
		l.MemoryBytes = q.Value()
	}
	return l
}

// containerMemoryRequest is c's memory request in bytes, zero if none.
func containerMemoryRequest(c *api.Container) int64 {
	if q, ok := c.Resources.Requests[api.ResourceMemory]; ok {
		return q.Value()
	}
	return 0
}

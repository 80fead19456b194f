package agent

import "github.com/berth-dev/berth/api"

// PodUsage is a running pod and what it uses now: what eviction ranks.
type PodUsage struct {
	Pod *api.Pod
	// MemoryBytes is the working set of all the pod's running containers.
	MemoryBytes int64
	// Static pods are never evicted (the kubelet treats them as critical).
	Static bool
}

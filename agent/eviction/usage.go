package eviction

import "github.com/berth-dev/berth/api"

// PodUsage is a running pod and what it uses now: what eviction ranks,
// and what the resource metrics (kubectl top) sample.
type PodUsage struct {
	Pod *api.Pod
	// MemoryBytes is the working set of all the pod's running containers.
	MemoryBytes int64
	// Static pods are never evicted (the kubelet treats them as critical).
	Static bool
	// Containers are the running containers, each with its run.
	Containers []ContainerUsage
}

// ContainerUsage is what one running container uses.
type ContainerUsage struct {
	Name string
	// Run identifies the run: a restarted container's CPU time starts
	// again from zero.
	Run         string
	MemoryBytes int64
	// CPUNanos is the CPU time the run has used since it started.
	CPUNanos int64
}

package api

import "time"

// ResourceMetrics are what the node and its running containers used over
// the last window: CPU in nanocores (the rate over the window), memory as
// the working set at its end. They are what the API server's metrics.k8s.io
// answers (kubectl top) from.
//
// +k8s:deepcopy-gen=false
type ResourceMetrics struct {
	Timestamp time.Time     `json:"timestamp"`
	Window    time.Duration `json:"window"`
	Node      ResourceUsage `json:"node"`
	Pods      []PodMetrics  `json:"pods"`
}

// ResourceUsage is a CPU rate and a working set.
//
// +k8s:deepcopy-gen=false
type ResourceUsage struct {
	NanoCores   int64 `json:"nanoCores"`
	MemoryBytes int64 `json:"memoryBytes"`
}

// PodMetrics are a pod's containers' usage.
//
// +k8s:deepcopy-gen=false
type PodMetrics struct {
	Namespace  string             `json:"namespace"`
	Name       string             `json:"name"`
	Containers []ContainerMetrics `json:"containers"`
}

// ContainerMetrics is one container's usage.
//
// +k8s:deepcopy-gen=false
type ContainerMetrics struct {
	Name string `json:"name"`
	ResourceUsage
}

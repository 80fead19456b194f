package eviction

import (
	"fmt"

	"github.com/berth-dev/berth/api"
)

// The messages of local-storage evictions, worded as the kubelet's.
const (
	emptyDirLimitMessage         = "Usage of EmptyDir volume %q exceeds the limit %q."
	podStorageLimitMessage       = "Pod ephemeral local storage usage exceeds the total limit of containers %s."
	containerStorageLimitMessage = "Container %s exceeded its local ephemeral storage limit %q."
)

// PodStorage is the local ephemeral storage a pod uses now: what the
// eviction manager compares with its ephemeral-storage limits.
type PodStorage struct {
	Pod *api.Pod
	// Static pods are never evicted (the kubelet treats them as critical).
	Static bool
	// Volumes is what each emptyDir and configMap volume holds, by name.
	// A memory-backed emptyDir is measured for its sizeLimit only: it
	// counts against memory, not the pod's storage.
	Volumes map[string]int64
	// Containers is what each container's logs take, over all its runs
	// the runtime keeps, by name.
	Containers map[string]int64
	// Other is the pod's other files: its service-account token.
	Other int64
	// Partial says a walk stopped at its budget: the figures are lower
	// bounds.
	Partial bool
}

// localEphemeral says whether a volume lives in the node's storage and
// counts toward the pod's ephemeral storage, as the kubelet counts
// volumes: an emptyDir on disk, and configMap.
func localEphemeral(v *api.Volume) bool {
	return (v.EmptyDir != nil && v.EmptyDir.Medium != api.StorageMediumMemory) || v.ConfigMap != nil
}

// Total is what counts against the pod's total limit: its local ephemeral
// volumes, its containers' logs and its other files.
func (s PodStorage) Total() int64 {
	total := s.Other
	for i := range s.Pod.Spec.Volumes {
		if v := &s.Pod.Spec.Volumes[i]; localEphemeral(v) {
			total += s.Volumes[v.Name]
		}
	}
	for _, n := range s.Containers {
		total += n
	}
	return total
}

// StorageLimitExceeded is the eviction message for a pod over one of its
// local-storage limits, "" for a pod within them. It checks in the
// kubelet's order: each emptyDir's sizeLimit, then the pod's total limit
// (the sum of its containers' ephemeral-storage limits, or an init
// container's where that is more) against Total, then each container's
// limit against its logs. Under the exec runtime a container writes to the
// node's file system outside its volumes as any process does: those writes
// cannot be told apart, and count toward no limit.
func StorageLimitExceeded(s PodStorage) string {
	spec := &s.Pod.Spec
	for _, v := range spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Sign() <= 0 {
			continue
		}
		if used, ok := s.Volumes[v.Name]; ok && used > v.EmptyDir.SizeLimit.Value() {
			return fmt.Sprintf(emptyDirLimitMessage, v.Name, v.EmptyDir.SizeLimit.String())
		}
	}
	if limit, ok := api.PodLimits(spec)[api.ResourceEphemeralStorage]; ok && s.Total() > limit.Value() {
		return fmt.Sprintf(podStorageLimitMessage, limit.String())
	}
	for _, c := range spec.Containers {
		limit, ok := c.Resources.Limits[api.ResourceEphemeralStorage]
		if !ok || limit.IsZero() {
			continue
		}
		if used, ok := s.Containers[c.Name]; ok && used > limit.Value() {
			return fmt.Sprintf(containerStorageLimitMessage, c.Name, limit.String())
		}
	}
	return ""
}

// HasStorageLimits says whether pod sets a limit StorageLimitExceeded
// checks: an emptyDir's sizeLimit, or an ephemeral-storage limit of one of
// its containers.
func HasStorageLimits(pod *api.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && v.EmptyDir.SizeLimit.Sign() > 0 {
			return true
		}
	}
	_, ok := api.PodLimits(&pod.Spec)[api.ResourceEphemeralStorage]
	return ok
}

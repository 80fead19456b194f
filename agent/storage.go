package agent

import (
	"context"
	"fmt"
	"sort"

	"github.com/berth-dev/berth/agent/du"
	"github.com/berth-dev/berth/api"
)

// The messages of local-storage evictions, worded as the kubelet's.
const (
	emptyDirLimitMessage         = "Usage of EmptyDir volume %q exceeds the limit %q."
	podStorageLimitMessage       = "Pod ephemeral local storage usage exceeds the total limit of containers %s."
	containerStorageLimitMessage = "Container %s exceeded its local ephemeral storage limit %q."
)

// storageWalkBudget bounds the files and directories one check looks at
// in one pod's volumes, so that a pod with millions of small files costs
// the agent little; past it the pod's usage is a lower bound. Tests
// shrink it.
var storageWalkBudget = 100_000

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

// hasStorageLimits says whether pod sets a limit StorageLimitExceeded
// checks: an emptyDir's sizeLimit, or an ephemeral-storage limit of one of
// its containers.
func hasStorageLimits(pod *api.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && v.EmptyDir.SizeLimit.Sign() > 0 {
			return true
		}
	}
	_, ok := api.PodLimits(&pod.Spec)[api.ResourceEphemeralStorage]
	return ok
}

// Storage measures the local ephemeral storage of the pods this node runs
// that have not ended, are not being stopped and have a limit to check
// (hasStorageLimits): the walk of their emptyDir and configMap volumes
// (within storageWalkBudget each pod), their runs' files as the runtime
// reports them, and their token. A pod with no limit is not walked: no
// measure of it could evict it.
func (m *PodManager) Storage(ctx context.Context) []PodStorage {
	pods, byPod, err := m.podRuns(ctx, (*podWorker).activePod, false)
	if err != nil {
		m.o.Logger.Error("list runtime for storage usage", "err", err)
		return nil
	}
	out := make([]PodStorage, 0, len(pods))
	for _, p := range pods {
		if !hasStorageLimits(p) {
			continue
		}
		s := PodStorage{Pod: p, Static: isStatic(p), Volumes: map[string]int64{}, Containers: map[string]int64{}}
		var walked du.Usage
		walk := func(dir string) int64 {
			left := storageWalkBudget - walked.Entries
			if left <= 0 {
				walked.Partial = true
				return 0
			}
			u, err := du.Walk(dir, left)
			if err != nil {
				m.o.Logger.Warn("storage usage", "pod", p.Namespace+"/"+p.Name, "err", err)
			}
			walked.Add(u)
			return u.Bytes
		}
		for i := range p.Spec.Volumes {
			v := &p.Spec.Volumes[i]
			if v.EmptyDir != nil || v.ConfigMap != nil {
				s.Volumes[v.Name] = walk(podVolumeDir(m.o.DataDir, string(p.UID), v.Name))
			}
		}
		s.Other = walk(serviceAccountDir(m.o.DataDir, string(p.UID)))
		s.Partial = walked.Partial
		for _, r := range byPod[string(p.UID)] {
			n, err := m.o.Runtime.DiskUsage(ctx, r.ID)
			if err != nil {
				continue // removed meanwhile
			}
			s.Containers[r.ID.Name] += n
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod.UID < out[j].Pod.UID })
	return out
}

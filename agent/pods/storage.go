package pods

import (
	"context"
	"sort"

	"github.com/berth-dev/berth/agent/du"
	"github.com/berth-dev/berth/agent/eviction"
)

// storageWalkBudget bounds the files and directories one check looks at
// in one pod's volumes, so that a pod with millions of small files costs
// the agent little; past it the pod's usage is a lower bound. Tests
// shrink it.
var storageWalkBudget = 100_000

// Storage measures the local ephemeral storage of the pods this node runs
// that have not ended, are not being stopped and have a limit to check
// (eviction.HasStorageLimits): the walk of their emptyDir and configMap volumes
// (within storageWalkBudget each pod), their runs' files as the runtime
// reports them, and their token. A pod with no limit is not walked: no
// measure of it could evict it.
func (m *Manager) Storage(ctx context.Context) []eviction.PodStorage {
	pods, byPod, err := m.podRuns(ctx, (*podWorker).activePod, false)
	if err != nil {
		m.o.Logger.Error("list runtime for storage usage", "err", err)
		return nil
	}
	out := make([]eviction.PodStorage, 0, len(pods))
	for _, p := range pods {
		if !eviction.HasStorageLimits(p) {
			continue
		}
		s := eviction.PodStorage{Pod: p, Static: IsStatic(p), Volumes: map[string]int64{}, Containers: map[string]int64{}}
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

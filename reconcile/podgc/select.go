package podgc

import (
	"cmp"
	"slices"
	"time"

	"github.com/berth-dev/berth/api"
)

// selectTerminated returns the finished pods to delete so that threshold of
// them remain, oldest first by creation time (then namespace and name, so
// the choice is stable). A threshold of zero or less keeps them all.
func selectTerminated(pods []*api.Pod, threshold int) []*api.Pod {
	if threshold <= 0 {
		return nil
	}
	var done []*api.Pod
	for _, p := range pods {
		if p.Finished() {
			done = append(done, p)
		}
	}
	if len(done) <= threshold {
		return nil
	}
	slices.SortFunc(done, func(a, b *api.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return done[:len(done)-threshold]
}

// selectOrphans returns the pods bound to a node that does not exist and
// has been missing for at least quarantine, so that a pod bound to a node
// still registering is not raced. since records when each missing node
// was first seen missing; selectOrphans returns it updated, forgetting the
// nodes that exist or no pod names any more.
func selectOrphans(pods []*api.Pod, nodes map[string]bool, since map[string]time.Time, now time.Time, quarantine time.Duration) ([]*api.Pod, map[string]time.Time) {
	next := map[string]time.Time{}
	var orphans []*api.Pod
	for _, p := range pods {
		node := p.Spec.NodeName
		if node == "" || nodes[node] {
			continue
		}
		first, ok := next[node]
		if !ok {
			first, ok = since[node]
			if !ok {
				first = now
			}
			next[node] = first
		}
		if now.Sub(first) >= quarantine {
			orphans = append(orphans, p)
		}
	}
	return orphans, next
}

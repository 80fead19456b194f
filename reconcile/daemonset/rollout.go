package daemonset

import (
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// limits are a rolling update's maxUnavailable and maxSurge in nodes, of
// the nodes that should run the pod, as Kubernetes'
// unavailableCount/surgeCount: both percentages round up.
func limits(ds *api.DaemonSet, desired int) (maxUnavailable, maxSurge int) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		return 1, 0
	}
	if ru.MaxSurge != nil {
		maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
	}
	if ru.MaxUnavailable != nil {
		maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
	}
	if maxUnavailable == 0 && maxSurge == 0 {
		maxUnavailable = 1
	}
	return maxUnavailable, maxSurge
}

func surgeAllowed(ds *api.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != api.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil {
		return false
	}
	n, _ := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 100, true)
	return n > 0
}

// split finds a node's new and old pod: ok is false when it has two of
// either (the manage step removes one).
func split(pods []*api.Pod, hash string) (newPod, oldPod *api.Pod, ok bool) {
	for _, p := range pods {
		if p.Labels[api.LabelControllerRevisionHash] == hash {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = p
		}
	}
	return newPod, oldPod, true
}

// rollingUpdate replaces old pods as Kubernetes' DaemonSet rollingUpdate
// does. Without surge, old pods are deleted (and made again by the next
// sync) while fewer than maxUnavailable nodes lack an available pod; an
// unavailable old pod is replaced at once. With surge, a new pod is
// started beside the old one on at most maxSurge nodes at a time, and the
// old one is deleted once the new one is available.
func (r *Reconciler) rollingUpdate(ctx context.Context, ds *api.DaemonSet, tpl *api.PodTemplateSpec, hash string, nodes map[string]*nodeState, now time.Time) (bool, error) {
	desired := 0
	for _, n := range nodes {
		if n.shouldRun {
			desired++
		}
	}
	maxUnavailable, maxSurge := limits(ds, desired)
	minReady := time.Duration(ds.Spec.MinReadySeconds) * time.Second
	avail := func(p *api.Pod) bool { ok, _ := available(p, minReady, now); return ok }
	names := slices.Sorted(maps.Keys(nodes))
	if maxSurge == 0 {
		var unavailable int
		var replace, candidates []*api.Pod
		for _, name := range names {
			n := nodes[name]
			newPod, oldPod, ok := split(n.pods, hash)
			switch {
			case !ok:
				unavailable++
			case oldPod == nil && newPod == nil, oldPod != nil && newPod != nil:
				if n.shouldRun {
					unavailable++
				}
			case newPod != nil:
				if !avail(newPod) {
					unavailable++
				}
			case !avail(oldPod):
				replace = append(replace, oldPod)
			case unavailable >= maxUnavailable:
			default:
				candidates = append(candidates, oldPod)
			}
		}
		room := min(max(maxUnavailable-unavailable, 0), len(candidates))
		del := append(replace, candidates[:room]...)
		return len(del) > 0, r.sync(ctx, ds, tpl, hash, nil, del)
	}
	var (
		surged        int
		del           []*api.Pod
		allowed, cand []string
	)
	for _, name := range names {
		n := nodes[name]
		newPod, oldPod, ok := split(n.pods, hash)
		if !ok {
			surged++
			continue
		}
		if !n.shouldRun {
			if oldPod != nil {
				del = append(del, oldPod)
			}
			continue
		}
		switch {
		case oldPod == nil:
		case newPod == nil:
			switch {
			case !avail(oldPod):
				allowed = append(allowed, name)
			case surged >= maxSurge:
			default:
				cand = append(cand, name)
			}
		default:
			if !avail(newPod) {
				surged++
				continue
			}
			del = append(del, oldPod)
		}
	}
	room := min(max(maxSurge-surged, 0), len(cand))
	create := append(allowed, cand[:room]...)
	return len(create)+len(del) > 0, r.sync(ctx, ds, tpl, hash, create, del)
}

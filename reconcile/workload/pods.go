package workload

import (
	"time"

	"github.com/berth-dev/berth/api"
)

// isActive reports whether a pod counts toward a controller's replicas: not
// finished and not on its way out, as Kubernetes' FilterActivePods.
func isActive(p *api.Pod) bool {
	return p.Status.Phase != api.PodSucceeded &&
		p.Status.Phase != api.PodFailed &&
		p.DeletionTimestamp == nil
}

// isTerminating reports whether a pod is being deleted and has not ended:
// it may still run, as Kubernetes counts terminatingReplicas.
func isTerminating(p *api.Pod) bool {
	return p.DeletionTimestamp != nil &&
		p.Status.Phase != api.PodSucceeded &&
		p.Status.Phase != api.PodFailed
}

// readyCondition returns the pod's Ready condition, or nil.
func readyCondition(p *api.Pod) *api.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == api.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// availableAfter reports whether a pod has been ready for minReady at now
// and, if it is ready but not yet available, how long until it is.
func availableAfter(p *api.Pod, minReady time.Duration, now time.Time) (bool, time.Duration) {
	return p.AvailableAfter(minReady, now)
}

// restarts is the highest restart count of the pod's containers.
func restarts(p *api.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}

package api

import "k8s.io/apimachinery/pkg/api/resource"

// PodQOSClass is the pod's quality-of-service class by Kubernetes' rules,
// so that eviction, oom_score_adj and `berth describe` agree on one answer.
// Only cpu and memory count, init containers included, and zero quantities
// count as unset. A limit without a request stands for its request (as
// defaulting would make it), so an undefaulted pod gets the same class.
func PodQOSClass(p *Pod) QOSClass {
	if p == nil {
		return QOSBestEffort
	}
	set, guaranteed := false, true
	containers := make([]Container, 0, len(p.Spec.InitContainers)+len(p.Spec.Containers))
	containers = append(containers, p.Spec.InitContainers...)
	containers = append(containers, p.Spec.Containers...)
	for _, c := range containers {
		for _, name := range []ResourceName{ResourceCPU, ResourceMemory} {
			req, hasReq := nonZero(c.Resources.Requests, name)
			lim, hasLim := nonZero(c.Resources.Limits, name)
			if hasReq || hasLim {
				set = true
			}
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !set:
		return QOSBestEffort
	case guaranteed:
		return QOSGuaranteed
	}
	return QOSBurstable
}

func nonZero(l ResourceList, name ResourceName) (resource.Quantity, bool) {
	q, ok := l[name]
	if !ok || q.IsZero() {
		return resource.Quantity{}, false
	}
	return q, true
}

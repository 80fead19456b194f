package api

import "k8s.io/apimachinery/pkg/api/resource"

// PodRequests is what a pod requests, as Kubernetes counts it: the sum
// over its containers, or a single init container's amount where that is
// more, since init containers run one at a time before the others. The
// resource quota and `berth describe node` count by it; the scheduler has
// its own allocation-free copy of the rule for its hot path.
func PodRequests(spec *PodSpec) ResourceList {
	return podAmount(spec, func(c *Container) ResourceList { return c.Resources.Requests })
}

// PodLimits is PodRequests for limits.
func PodLimits(spec *PodSpec) ResourceList {
	return podAmount(spec, func(c *Container) ResourceList { return c.Resources.Limits })
}

func podAmount(spec *PodSpec, of func(*Container) ResourceList) ResourceList {
	sum := ResourceList{}
	for i := range spec.Containers {
		AddResources(sum, of(&spec.Containers[i]))
	}
	for i := range spec.InitContainers {
		for name, q := range of(&spec.InitContainers[i]) {
			if cur, ok := sum[name]; !ok || q.Cmp(cur) > 0 {
				sum[name] = q.DeepCopy()
			}
		}
	}
	return sum
}

// AddResources adds every amount of add to into, resource by resource. The
// quantities put into into are its own: neither list shares one with the
// other afterwards.
func AddResources(into, add ResourceList) {
	for name, q := range add {
		AddQuantity(into, name, q)
	}
}

// AddQuantity adds q to l[name], which it starts when absent.
func AddQuantity(l ResourceList, name ResourceName, q resource.Quantity) {
	cur, ok := l[name]
	if !ok {
		l[name] = q.DeepCopy()
		return
	}
	cur = cur.DeepCopy()
	cur.Add(q)
	l[name] = cur
}

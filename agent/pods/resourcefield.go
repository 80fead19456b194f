package pods

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
)

// resourceFieldValue is what a resourceFieldRef reads, as the kubelet
// writes it: a request or limit of container c, divided by the divisor
// (1 when unset) and rounded up; cpu counted in millicores against the
// divisor's, everything else in bytes. A cpu, memory or
// ephemeral-storage limit c does not set (or sets to zero) is the node's
// allocatable, what the container could use at most.
func resourceFieldValue(fs *corev1.ResourceFieldSelector, c *api.Container, allocatable api.ResourceList) (string, error) {
	kind, name, ok := strings.Cut(fs.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") || !downwardResource(api.ResourceName(name)) {
		return "", fmt.Errorf("unsupported container resource: %v", fs.Resource)
	}
	rn := api.ResourceName(name)
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q := list[rn]
	// Huge pages are never overcommitted: a container that uses them
	// limits them.
	if kind == "limits" && q.IsZero() && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
		q = allocatable[rn]
	}
	divisor := fs.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var v float64
	if rn == api.ResourceCPU {
		v = float64(q.MilliValue()) / float64(divisor.MilliValue())
	} else {
		v = float64(q.Value()) / float64(divisor.Value())
	}
	return strconv.FormatInt(int64(math.Ceil(v)), 10), nil
}

// downwardResource says whether the downward API reads resource n: cpu,
// memory, ephemeral-storage and huge pages.
func downwardResource(n api.ResourceName) bool {
	switch n {
	case api.ResourceCPU, api.ResourceMemory, api.ResourceEphemeralStorage:
		return true
	}
	return strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix)
}

// podContainer is the container or init container of pod named name.
func podContainer(pod *api.Pod, name string) *api.Container {
	for _, cs := range [][]api.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

// containerResourceValue is a resourceFieldRef's value for pod: of the
// container it names, or of self (env) when it names none.
func containerResourceValue(pod *api.Pod, self *api.Container, fs *corev1.ResourceFieldSelector, allocatable api.ResourceList) (string, error) {
	c := self
	if fs.ContainerName != "" {
		if c = podContainer(pod, fs.ContainerName); c == nil {
			return "", fmt.Errorf("container %s not found", fs.ContainerName)
		}
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef %s names no container", fs.Resource)
	}
	return resourceFieldValue(fs, c, allocatable)
}

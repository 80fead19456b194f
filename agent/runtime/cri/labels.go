package cri

import (
	"strconv"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/agent/runtime"
)

// Labels berth puts on its sandboxes and containers: the kubelet's keys for
// the pod and container, so crictl and other tools read them as theirs,
// and one of berth's own that marks what it made.
const (
	labelManaged       = "dev.berth.managed"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelContainerName = "io.kubernetes.container.name"
	// annotationAttempt repeats the run's attempt: the metadata's is the
	// runtime's to keep, this one berth's.
	annotationAttempt = "dev.berth.attempt"
	// The kubelet's annotations of where a container's termination
	// message is, and whether its log stands in for an empty one.
	annotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	annotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	policyFallbackToLogsOnError        = "FallbackToLogsOnError"
)

// runID is the berth ID of a CRI container made by this runtime; false for
// one it did not make.
func runID(labels, annotations map[string]string, md *runtimeapi.ContainerMetadata) (runtime.ID, bool) {
	if labels[labelManaged] != "true" || labels[labelPodUID] == "" || labels[labelContainerName] == "" {
		return runtime.ID{}, false
	}
	attempt := 0
	if md != nil {
		attempt = int(md.Attempt)
	}
	if a, err := strconv.Atoi(annotations[annotationAttempt]); err == nil && a >= 0 {
		attempt = a
	}
	return runtime.ID{PodUID: labels[labelPodUID], Name: labels[labelContainerName], Attempt: attempt}, true
}

func podLabels(p *runtime.Pod) map[string]string {
	return map[string]string{
		labelManaged:      "true",
		labelPodUID:       p.UID,
		labelPodName:      p.Name,
		labelPodNamespace: p.Namespace,
	}
}

func containerLabels(c *runtime.Container) map[string]string {
	l := podLabels(c.Pod)
	l[labelContainerName] = c.ID.Name
	return l
}

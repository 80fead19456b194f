package pods

import (
	"fmt"

	"github.com/berth-dev/berth/api"
)

// Reasons of the pod workers' events, as the kubelet spells them.
const (
	ReasonStarted   = "Started"
	ReasonKilling   = "Killing"
	ReasonBackOff   = "BackOff"
	ReasonUnhealthy = "Unhealthy"
	ReasonFailed    = "Failed"
)

// Events receives what the pod workers do to a pod, so that `berth
// describe pod` tells why it restarts. It is called from the workers and
// must not block them.
type Events interface {
	PodEvent(pod *api.Pod, eventType, reason, message string)
}

// podEvent hands an event about pod to the manager's Events, if any.
func (w *podWorker) podEvent(pod *api.Pod, eventType, reason, message string) {
	// An orphan (runs left by an earlier agent of a pod the API no longer
	// has) has no object for an event to be about.
	if e := w.m.o.Events; e != nil && pod != nil {
		e.PodEvent(pod, eventType, reason, message)
	}
}

// podRef names a pod in messages as the kubelet does: NAME_NAMESPACE(UID).
func podRef(pod *api.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

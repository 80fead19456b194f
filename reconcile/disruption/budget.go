package disruption

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// DeletionTimeout is how long a pod an eviction let go may stay in a
// budget's disruptedPods without being seen deleted: after it the pod is
// taken to be staying and counts again, as in Kubernetes.
const DeletionTimeout = 2 * time.Minute

// scaleFunc finds the controller of a pod by its controller reference and
// returns the controller's UID and the replicas it wants; ok is false
// when no controller berth knows of (ReplicationController, ReplicaSet,
// Deployment) answers to the reference.
type scaleFunc func(namespace string, ref *metav1.OwnerReference) (uid types.UID, replicas int32, ok bool)

// expectedPods computes how many pods a budget counts on and how many of
// them it wants healthy, as Kubernetes' getExpectedPodCount: with an
// integer minAvailable, the selected pods and that number; with a
// percentage, or with maxUnavailable, the replicas the pods' controllers
// want (each controller once), scaled. unmanaged names the pods with no
// controller, which a count from replicas cannot account for; a pod
// whose controller is not found is an error.
func expectedPods(b *api.PodDisruptionBudget, pods []*api.Pod, scale scaleFunc) (expected, desired int32, unmanaged []string, err error) {
	switch {
	case b.Spec.MaxUnavailable != nil:
		if expected, unmanaged, err = expectedScale(pods, scale); err != nil {
			return 0, 0, unmanaged, err
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, unmanaged, err
		}
		desired = max(expected-int32(n), 0)
	case b.Spec.MinAvailable != nil && b.Spec.MinAvailable.Type == intstr.Int:
		desired, expected = b.Spec.MinAvailable.IntVal, int32(len(pods))
	case b.Spec.MinAvailable != nil:
		if expected, unmanaged, err = expectedScale(pods, scale); err != nil {
			return 0, 0, unmanaged, err
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, unmanaged, err
		}
		desired = int32(n)
	}
	return expected, desired, unmanaged, nil
}

// expectedScale adds up the replicas of the pods' controllers, each
// counted once.
func expectedScale(pods []*api.Pod, scale scaleFunc) (int32, []string, error) {
	scales := map[types.UID]int32{}
	var unmanaged []string
	for _, pod := range pods {
		ref := api.ControllerOf(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		if _, ok := scales[ref.UID]; ok {
			continue
		}
		uid, n, ok := scale(pod.Namespace, ref)
		if !ok {
			return 0, unmanaged, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		scales[uid] = n
	}
	var total int32
	for _, n := range scales {
		total += n
	}
	return total, unmanaged, nil
}

// disruptedPods keeps the entries of a budget's disruptedPods whose pods
// are still there, not yet being deleted, and within DeletionTimeout of
// their eviction; expired names the pods whose time ran out. recheck is
// when the earliest kept entry expires (zero when none is kept).
func disruptedPods(b *api.PodDisruptionBudget, pods []*api.Pod, now time.Time) (kept map[string]metav1.Time, expired []string, recheck time.Time) {
	kept = map[string]metav1.Time{}
	if b.Status.DisruptedPods == nil {
		return kept, nil, time.Time{}
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		at, ok := b.Status.DisruptedPods[pod.Name]
		if !ok {
			continue
		}
		deadline := at.Add(DeletionTimeout)
		if deadline.Before(now) {
			expired = append(expired, pod.Name)
			continue
		}
		if recheck.IsZero() || deadline.Before(recheck) {
			recheck = deadline
		}
		kept[pod.Name] = at
	}
	return kept, expired, recheck
}

// countHealthy counts the ready pods that are neither being deleted nor
// about to be (in disrupted and within DeletionTimeout).
func countHealthy(pods []*api.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disrupted[pod.Name]; ok && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if pod.Ready() {
			n++
		}
	}
	return n
}

// disruptionsAllowed is how many pods may go: the healthy ones beyond the
// desired, and none while no pod is expected, so that a budget whose
// first pods appear before it is counted is safe.
func disruptionsAllowed(healthy, desired, expected int32) int32 {
	if expected <= 0 || healthy <= desired {
		return 0
	}
	return healthy - desired
}

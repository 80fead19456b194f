package statefulset

import (
	"maps"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// ordinalOf returns the ordinal in a pod's name PARENT-ORDINAL, and false
// for a name of another shape.
func ordinalOf(parent, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, parent+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// podName is the name of the pod of an ordinal.
func podName(set *api.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

// claimName is the name of a pod's claim made from a template: TEMPLATE-POD.
func claimName(template, pod string) string { return template + "-" + pod }

// newPod is the pod of an ordinal made from a revision's template: its
// stable name, hostname and subdomain, its claims as volumes, and the
// labels Kubernetes gives it.
func newPod(set *api.StatefulSet, t *api.PodTemplateSpec, revision string, ordinal int) *api.Pod {
	t = t.DeepCopy()
	name := podName(set, ordinal)
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       set.Namespace,
			Name:            name,
			Labels:          maps.Clone(t.Labels),
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, setKind.GVK)},
		},
		Spec: t.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[api.LabelStatefulSetPodName] = name
	pod.Labels[api.LabelPodIndex] = strconv.Itoa(ordinal)
	pod.Labels[api.LabelControllerRevisionHash] = revision
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName
	api.StatefulSetVolumes(&pod.Spec, set.Spec.VolumeClaimTemplates, func(c string) string { return claimName(c, name) })
	api.Default(pod)
	return pod
}

// newClaim is a pod's claim made from a template, labelled with the set's
// selector, owned by the set when whenDeleted is Delete.
func newClaim(set *api.StatefulSet, t *api.PersistentVolumeClaim, pod string) *api.PersistentVolumeClaim {
	c := &api.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   set.Namespace,
			Name:        claimName(t.Name, pod),
			Labels:      maps.Clone(t.Labels),
			Annotations: maps.Clone(t.Annotations),
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if set.Spec.Selector != nil {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		maps.Copy(c.Labels, set.Spec.Selector.MatchLabels)
	}
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenDeleted == api.DeletePersistentVolumeClaimRetentionPolicyType {
		c.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, setKind.GVK)}
	}
	api.Default(c)
	return c
}

// runningAndReady reports whether a pod runs and is ready, what
// OrderedReady waits for.
func runningAndReady(p *api.Pod) bool {
	return p.Status.Phase == api.PodRunning && p.Ready() && p.DeletionTimestamp == nil
}

// available reports whether a pod runs and has been ready for minReady at
// now and, if not yet, how long until it is.
func available(p *api.Pod, minReady time.Duration, now time.Time) (bool, time.Duration) {
	if !runningAndReady(p) {
		return false, 0
	}
	return p.AvailableAfter(minReady, now)
}

// finished reports whether a pod's containers ended for good: it is
// replaced, as Kubernetes' StatefulSet replaces a failed pod.
func finished(p *api.Pod) bool {
	return p.Status.Phase == api.PodFailed || p.Status.Phase == api.PodSucceeded
}

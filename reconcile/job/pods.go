package job

import (
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// maxGenerateNamePrefix keeps a generated pod name within 63 characters
// once the store adds its five random characters.
const maxGenerateNamePrefix = 58

// finished reports whether a pod has ended.
func finished(p *api.Pod) bool {
	return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
}

// tracked reports whether the pod still holds the Job's tracking
// finalizer: it ended or failed uncounted, or it still runs.
func tracked(p *api.Pod) bool { return slices.Contains(p.Finalizers, api.FinalizerJobTracking) }

// controlledBy reports whether uid is the pod's controller.
func controlledBy(p *api.Pod, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(p)
	return ref != nil && ref.UID == uid
}

// restarts is the sum of the restarts of a pod's containers, which an
// OnFailure Job counts toward backoffLimit.
func restarts(p *api.Pod) int32 {
	var n int32
	for _, s := range p.Status.InitContainerStatuses {
		n += s.RestartCount
	}
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// podIndex is an Indexed Job's pod's completion index, -1 when it has
// none or one out of range.
func podIndex(p *api.Pod, completions int32) int32 {
	v, ok := p.Annotations[api.AnnotationJobCompletionIndex]
	if !ok {
		return -1
	}
	i, err := strconv.ParseInt(v, 10, 32)
	if err != nil || i < 0 || int32(i) >= completions {
		return -1
	}
	return int32(i)
}

// indexFailures is how many earlier pods of the pod's index failed, as
// the annotation the controller gave it says.
func indexFailures(p *api.Pod) int32 {
	n, err := strconv.ParseInt(p.Annotations[api.AnnotationJobIndexFailureCount], 10, 32)
	if err != nil || n < 0 {
		return 0
	}
	return int32(n)
}

// finishTime is when a pod ended: the latest end of its containers, or
// when it was deleted, or now.
func finishTime(p *api.Pod, now time.Time) time.Time {
	var t time.Time
	for _, s := range p.Status.ContainerStatuses {
		if term := s.State.Terminated; term != nil && term.FinishedAt.After(t) {
			t = term.FinishedAt.Time
		}
	}
	if t.IsZero() && p.DeletionTimestamp != nil {
		t = p.DeletionTimestamp.Time
	}
	if t.IsZero() || t.After(now) {
		t = now
	}
	return t
}

// newPod is a pod of the Job's template: labelled with the Job's
// selector and name, held by the tracking finalizer, controlled by the
// Job; for an Indexed Job (index >= 0) also annotated and labelled with
// its index, given it in JOB_COMPLETION_INDEX and named NAME-INDEX as a
// host, as Kubernetes makes them. failures is, with
// backoffLimitPerIndex, how many pods of the index failed before.
func newPod(j *api.Job, index, failures int32) *api.Pod {
	t := j.Spec.Template.DeepCopy()
	prefix := j.Name + "-"
	if index >= 0 {
		prefix += strconv.Itoa(int(index)) + "-"
	}
	if len(prefix) > maxGenerateNamePrefix {
		prefix = prefix[:maxGenerateNamePrefix]
	}
	labels := t.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	if j.Spec.Selector != nil {
		for k, v := range j.Spec.Selector.MatchLabels {
			if _, ok := labels[k]; !ok {
				labels[k] = v
			}
		}
	}
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       j.Namespace,
			GenerateName:    prefix,
			Labels:          labels,
			Annotations:     t.Annotations,
			Finalizers:      append(t.Finalizers, api.FinalizerJobTracking),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, jobKind.GVK)},
		},
		Spec: t.Spec,
	}
	if index >= 0 {
		idx := strconv.Itoa(int(index))
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[api.AnnotationJobCompletionIndex] = idx
		pod.Labels[api.AnnotationJobCompletionIndex] = idx
		if j.Spec.BackoffLimitPerIndex != nil {
			pod.Annotations[api.AnnotationJobIndexFailureCount] = strconv.Itoa(int(failures))
		}
		if pod.Spec.Hostname == "" {
			host := j.Name + "-" + idx
			if len(host) <= 63 {
				pod.Spec.Hostname = host
			}
		}
		env := api.EnvVar{Name: api.EnvJobCompletionIndex, Value: idx}
		for _, cs := range [][]api.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range cs {
				cs[i].Env = append(cs[i].Env, env)
			}
		}
	}
	api.Default(pod)
	return pod
}

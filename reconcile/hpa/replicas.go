package hpa

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/berth-dev/berth/api"
)

// PodUsage is one pod's sample: each container's usage over a window
// ending at Timestamp.
type PodUsage struct {
	Timestamp  time.Time
	Window     time.Duration
	Containers map[string]api.ResourceList
}

// tolerances are how far under and over 1 a usage ratio may be and
// still change nothing: Kubernetes' 0.1 both ways, or a behaviour's own.
type tolerances struct{ down, up float64 }

func (t tolerances) within(ratio float64) bool { return 1.0-t.down <= ratio && ratio <= 1.0+t.up }

// calculator holds what Kubernetes' ReplicaCalculator is configured with.
type calculator struct {
	cpuInitializationPeriod time.Duration
	initialReadinessDelay   time.Duration
	now                     time.Time
}

// podSets are the pods of a target, grouped as Kubernetes groups them.
type podSets struct {
	ready   int
	unready map[string]bool
	missing map[string]bool
	ignored map[string]bool
}

// groupPods follows Kubernetes' groupPods: deleted and failed pods are
// ignored; pending ones are unready; a pod without a sample is missing;
// for cpu, a pod that is not ready, or whose sample may hold its start,
// is unready.
func (c calculator) groupPods(pods []*api.Pod, metrics map[string]int64, usage map[string]PodUsage, res api.ResourceName) podSets {
	s := podSets{unready: map[string]bool{}, missing: map[string]bool{}, ignored: map[string]bool{}}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == api.PodFailed {
			s.ignored[p.Name] = true
			continue
		}
		if p.Status.Phase == api.PodPending {
			s.unready[p.Name] = true
			continue
		}
		if _, ok := metrics[p.Name]; !ok {
			s.missing[p.Name] = true
			continue
		}
		if res == api.ResourceCPU {
			var cond *api.PodCondition
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == api.PodReady {
					cond = &p.Status.Conditions[i]
				}
			}
			unready := false
			u := usage[p.Name]
			switch {
			case cond == nil || p.Status.StartTime == nil:
				unready = true
			case p.Status.StartTime.Add(c.cpuInitializationPeriod).After(c.now):
				unready = cond.Status == api.ConditionFalse || u.Timestamp.Before(cond.LastTransitionTime.Add(u.Window))
			default:
				unready = cond.Status == api.ConditionFalse && p.Status.StartTime.Add(c.initialReadinessDelay).After(cond.LastTransitionTime.Time)
			}
			if unready {
				s.unready[p.Name] = true
				continue
			}
		}
		s.ready++
	}
	return s
}

// podRequests sums each pod's requests of res, over its containers or
// the one named; a container without a request is an error, as in
// Kubernetes.
func podRequests(pods []*api.Pod, container string, res api.ResourceName) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, p := range pods {
		var sum int64
		found := false
		for _, c := range p.Spec.Containers {
			if container != "" && c.Name != container {
				continue
			}
			q, ok := c.Resources.Requests[res]
			if !ok {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", res, c.Name, p.Name)
			}
			sum += q.MilliValue()
			found = true
		}
		if container != "" && !found {
			return nil, fmt.Errorf("container %s not present in pod %s", container, p.Name)
		}
		out[p.Name] = sum
	}
	return out, nil
}

// metricsOf turns samples into milli-units of res per pod, of every
// container or the one named.
func metricsOf(usage map[string]PodUsage, container string, res api.ResourceName) map[string]int64 {
	out := make(map[string]int64, len(usage))
	for name, u := range usage {
		var sum int64
		found := false
		for cname, rl := range u.Containers {
			if container != "" && cname != container {
				continue
			}
			if q, ok := rl[res]; ok {
				sum += q.MilliValue()
				found = true
			}
		}
		if found {
			out[name] = sum
		}
	}
	return out
}

var (
	errNoPods    = errors.New("no pods returned by selector while calculating replica count")
	errNoMetrics = errors.New("did not receive metrics for targeted pods (pods might be unready)")
	errNoMatch   = errors.New("no metrics returned matched known pods")
)

// utilizationRatio is Kubernetes' GetResourceUtilizationRatio.
func utilizationRatio(metrics, requests map[string]int64, target int32) (ratio float64, utilization int32, rawAverage int64, err error) {
	var metricsTotal, requestsTotal, n int64
	for name, m := range metrics {
		req, ok := requests[name]
		if !ok {
			continue
		}
		metricsTotal += m
		requestsTotal += req
		n++
	}
	if requestsTotal == 0 {
		return 0, 0, 0, errNoMatch
	}
	utilization = int32(metricsTotal * 100 / requestsTotal)
	return float64(utilization) / float64(target), utilization, metricsTotal / n, nil
}

// usageRatio is Kubernetes' GetMetricUsageRatio.
func usageRatio(metrics map[string]int64, target int64) (float64, int64) {
	var total int64
	for _, m := range metrics {
		total += m
	}
	avg := total / int64(len(metrics))
	return float64(avg) / float64(target), avg
}

// resourceReplicas is Kubernetes' GetResourceReplicas: the replicas that
// bring the pods' average utilization of res to target percent of their
// requests. Unready pods count as using nothing on a scale up; missing
// ones as using their request (or the target, if more) on a scale down
// and nothing on a scale up; a change within the tolerance, or that the
// pods left out would turn around, is none.
func (c calculator) resourceReplicas(current int32, target int32, res api.ResourceName, container string, pods []*api.Pod, usage map[string]PodUsage, tol tolerances) (int32, int32, int64, error) {
	if len(pods) == 0 {
		return 0, 0, 0, errNoPods
	}
	metrics := metricsOf(usage, container, res)
	g := c.groupPods(pods, metrics, usage, res)
	drop(metrics, g.ignored, g.unready)
	if len(metrics) == 0 {
		return 0, 0, 0, errNoMetrics
	}
	requests, err := podRequests(pods, container, res)
	if err != nil {
		return 0, 0, 0, err
	}
	ratio, utilization, raw, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, 0, 0, err
	}
	scaleUpWithUnready := len(g.unready) > 0 && ratio > 1.0
	if !scaleUpWithUnready && len(g.missing) == 0 {
		if tol.within(ratio) {
			return current, utilization, raw, nil
		}
		return int32(math.Ceil(ratio * float64(g.ready))), utilization, raw, nil
	}
	if len(g.missing) > 0 {
		fallback := int64(max(100, target))
		for name := range g.missing {
			if ratio < 1.0 {
				metrics[name] = requests[name] * fallback / 100
			} else if ratio > 1.0 {
				metrics[name] = 0
			}
		}
	}
	if scaleUpWithUnready {
		for name := range g.unready {
			metrics[name] = 0
		}
	}
	newRatio, _, _, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, 0, 0, err
	}
	if tol.within(newRatio) || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return current, utilization, raw, nil
	}
	n := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1.0 && n > current) || (newRatio > 1.0 && n < current) {
		return current, utilization, raw, nil
	}
	return n, utilization, raw, nil
}

// valueReplicas is Kubernetes' calcPlainMetricReplicas for a resource's
// average value: the replicas that bring the pods' average use of res
// to target milli-units.
func (c calculator) valueReplicas(current int32, target int64, res api.ResourceName, container string, pods []*api.Pod, usage map[string]PodUsage, tol tolerances) (int32, int64, error) {
	if len(pods) == 0 {
		return 0, 0, errNoPods
	}
	metrics := metricsOf(usage, container, res)
	g := c.groupPods(pods, metrics, usage, res)
	drop(metrics, g.ignored, g.unready)
	if len(metrics) == 0 {
		return 0, 0, errNoMetrics
	}
	ratio, avg := usageRatio(metrics, target)
	scaleUpWithUnready := len(g.unready) > 0 && ratio > 1.0
	if !scaleUpWithUnready && len(g.missing) == 0 {
		if tol.within(ratio) {
			return current, avg, nil
		}
		return int32(math.Ceil(ratio * float64(g.ready))), avg, nil
	}
	for name := range g.missing {
		if ratio < 1.0 {
			metrics[name] = target
		} else {
			metrics[name] = 0
		}
	}
	if scaleUpWithUnready {
		for name := range g.unready {
			metrics[name] = 0
		}
	}
	newRatio, _ := usageRatio(metrics, target)
	if tol.within(newRatio) || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return current, avg, nil
	}
	n := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1.0 && n > current) || (newRatio > 1.0 && n < current) {
		return current, avg, nil
	}
	return n, avg, nil
}

func drop(metrics map[string]int64, sets ...map[string]bool) {
	for _, s := range sets {
		for name := range s {
			delete(metrics, name)
		}
	}
}

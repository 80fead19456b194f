package job

import (
	"fmt"
	"slices"
	"time"

	"github.com/berth-dev/berth/api"
)

// Kubernetes' back-off between a Job's failed pods: 10 s, doubling with
// each failure since the last success, up to 6 minutes.
const (
	DefaultPodFailureBackoff = 10 * time.Second
	MaxPodFailureBackoff     = 6 * time.Minute
)

// backoffRecord is a Job's failures since its last success and when the
// last of them ended.
type backoffRecord struct {
	failures    int
	lastFailure time.Time
}

// delay is how long after the last failure the next pod may start.
func (b backoffRecord) delay() time.Duration {
	if b.failures == 0 {
		return 0
	}
	d := DefaultPodFailureBackoff
	for i := 1; i < b.failures && d < MaxPodFailureBackoff; i++ {
		d *= 2
	}
	return min(d, MaxPodFailureBackoff)
}

// remaining is how long from now until the next pod may start.
func (b backoffRecord) remaining(now time.Time) time.Duration {
	if b.failures == 0 {
		return 0
	}
	return max(b.lastFailure.Add(b.delay()).Sub(now), 0)
}

// next is the record after the pods that just ended: a success clears
// the failures before it, as Kubernetes' newBackoffRecord.
func (b backoffRecord) next(succeeded, failed []time.Time) backoffRecord {
	if len(succeeded) == 0 && len(failed) == 0 {
		return b
	}
	if len(succeeded) > 0 {
		last := slices.MaxFunc(succeeded, time.Time.Compare)
		b = backoffRecord{}
		for _, f := range failed {
			if f.After(last) {
				b.failures++
				b.lastFailure = laterOf(b.lastFailure, f)
			}
		}
		return b
	}
	for _, f := range failed {
		b.failures++
		b.lastFailure = laterOf(b.lastFailure, f)
	}
	return b
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// policyMatch is the rule of a pod failure policy that matched a failed
// pod, and the message the Job's condition gives when it fails the Job.
type policyMatch struct {
	action  api.PodFailurePolicyAction
	message string
}

// matchPodFailurePolicy finds the first rule matching a failed pod, as
// Kubernetes' matchPodFailurePolicy: nil when none does (the failure
// counts).
func matchPodFailurePolicy(policy *api.PodFailurePolicy, pod *api.Pod) *policyMatch {
	if policy == nil {
		return nil
	}
	for i, rule := range policy.Rules {
		if req := rule.OnExitCodes; req != nil {
			if c := matchExitCodes(req, pod); c != nil {
				return &policyMatch{action: rule.Action, message: fmt.Sprintf(
					"Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
					c.Name, pod.Namespace, pod.Name, c.State.Terminated.ExitCode, rule.Action, i)}
			}
			continue
		}
		for _, pat := range rule.OnPodConditions {
			for _, c := range pod.Status.Conditions {
				if c.Type == pat.Type && c.Status == pat.Status {
					return &policyMatch{action: rule.Action, message: fmt.Sprintf(
						"Pod %s/%s has condition %s matching %s rule at index %d",
						pod.Namespace, pod.Name, c.Type, rule.Action, i)}
				}
			}
		}
	}
	return nil
}

// matchExitCodes returns the first container (init containers first)
// that ended with an exit code the requirement names; a zero exit code
// never matches.
func matchExitCodes(req *api.PodFailurePolicyOnExitCodesRequirement, pod *api.Pod) *api.ContainerStatus {
	for _, cs := range [][]api.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range cs {
			c := &cs[i]
			if req.ContainerName != nil && *req.ContainerName != c.Name {
				continue
			}
			term := c.State.Terminated
			if term == nil || term.ExitCode == 0 {
				continue
			}
			in := slices.Contains(req.Values, term.ExitCode)
			if in == (req.Operator == api.PodFailurePolicyOnExitCodesOpIn) {
				return c
			}
		}
	}
	return nil
}

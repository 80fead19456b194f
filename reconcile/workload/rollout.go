package workload

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// ResolveFenceposts turns a rolling update's maxSurge and maxUnavailable,
// numbers or percentages of desired, into pod counts as Kubernetes does:
// surge rounds up, unavailable rounds down, and if both come to zero,
// one pod may be unavailable so that the rollout can move at all.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32, err error) {
	zero := intstr.FromInt32(0)
	if maxSurge == nil {
		maxSurge = &zero
	}
	if maxUnavailable == nil {
		maxUnavailable = &zero
	}
	s, err := intstr.GetScaledValueFromIntOrPercent(maxSurge, int(desired), true)
	if err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, int(desired), false)
	if err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}

// rollingBounds are a Deployment's resolved surge and unavailability, with
// unavailability capped at replicas, as Kubernetes' MaxUnavailable and
// MaxSurge; Recreate has none.
func rollingBounds(d *api.Deployment) (surge, unavailable int32, err error) {
	replicas := replicasOf(d.Spec.Replicas)
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != api.RollingUpdateDeploymentStrategyType || ru == nil {
		return 0, 0, nil
	}
	surge, unavailable, err = ResolveFenceposts(ru.MaxSurge, ru.MaxUnavailable, replicas)
	if err != nil {
		return 0, 0, err
	}
	return surge, min(unavailable, replicas), nil
}

// RSCounts is what the rollout arithmetic needs of one ReplicaSet.
type RSCounts struct {
	Name    string
	Created time.Time
	// Replicas is spec.replicas: what the ReplicaSet is asked to run.
	Replicas int32
	// Available is status.availableReplicas.
	Available int32
}

// Rollout is the state one rolling-update step starts from.
type Rollout struct {
	// Replicas, MaxSurge and MaxUnavailable are the Deployment's, resolved.
	Replicas, MaxSurge, MaxUnavailable int32
	// New is the ReplicaSet of the current template; Old are the others.
	New RSCounts
	Old []RSCounts
}

// RolloutStep is how to scale now: the new ReplicaSet to NewReplicas, and
// each old one, by name, to the count given (only those that change).
type RolloutStep struct {
	NewReplicas int32
	Old         map[string]int32
}

// RollingStep is one step of a rolling update, the arithmetic of
// Kubernetes' rolloutRolling: scale the new ReplicaSet up as far as
// maxSurge allows (or down to replicas); if that changed nothing, scale the
// old ones down, unhealthy pods first, as far as maxUnavailable allows.
// Running it on its own output's state converges on New at Replicas and
// every Old at zero.
func RollingStep(r Rollout) RolloutStep {
	step := RolloutStep{NewReplicas: newRSReplicas(r)}
	if step.NewReplicas != r.New.Replicas {
		return step
	}
	step.Old = scaleDownOld(r)
	return step
}

// newRSReplicas is Kubernetes' NewRSNewReplicas for RollingUpdate, with
// reconcileNewReplicaSet's scale-down of a new ReplicaSet above replicas.
func newRSReplicas(r Rollout) int32 {
	if r.New.Replicas >= r.Replicas {
		return r.Replicas
	}
	current := r.New.Replicas
	for _, o := range r.Old {
		current += o.Replicas
	}
	maxTotal := r.Replicas + r.MaxSurge
	if current >= maxTotal {
		return r.New.Replicas
	}
	up := min(maxTotal-current, r.Replicas-r.New.Replicas)
	return r.New.Replicas + up
}

// scaleDownOld is Kubernetes' reconcileOldReplicaSets: first
// cleanupUnhealthyReplicas (scale old ReplicaSets down by their unavailable
// pods, oldest first, as far as the budget allows), then
// scaleDownOldReplicaSetsForRollingUpdate (scale down available pods while
// more than replicas-maxUnavailable are available).
func scaleDownOld(r Rollout) map[string]int32 {
	old := slices.Clone(r.Old)
	slices.SortStableFunc(old, func(a, b RSCounts) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	var oldPods int32
	for _, o := range old {
		oldPods += o.Replicas
	}
	if oldPods == 0 {
		return nil
	}
	allPods := oldPods + r.New.Replicas
	minAvailable := r.Replicas - r.MaxUnavailable
	newUnavailable := r.New.Replicas - r.New.Available
	maxScaledDown := allPods - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return nil
	}
	out := map[string]int32{}
	// cleanupUnhealthyReplicas
	var cleaned int32
	for i := range old {
		if cleaned >= maxScaledDown {
			break
		}
		o := &old[i]
		if o.Replicas == 0 || o.Replicas == o.Available {
			continue
		}
		down := min(maxScaledDown-cleaned, o.Replicas-o.Available)
		o.Replicas -= down
		out[o.Name] = o.Replicas
		cleaned += down
	}
	// scaleDownOldReplicaSetsForRollingUpdate
	available := r.New.Available
	for _, o := range old {
		available += o.Available
	}
	if available <= minAvailable {
		return out
	}
	total := available - minAvailable
	var scaled int32
	for i := range old {
		if scaled >= total {
			break
		}
		o := &old[i]
		if o.Replicas == 0 {
			continue
		}
		down := min(o.Replicas, total-scaled)
		o.Replicas -= down
		out[o.Name] = o.Replicas
		scaled += down
	}
	return out
}

package workload

import (
	"context"
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// Reasons of the Deployment conditions, as Kubernetes names them.
const (
	// Progressing: the new ReplicaSet runs every replica, available.
	ReasonNewReplicaSetAvailable = "NewReplicaSetAvailable"
	// Progressing: the rollout moved in this sync.
	ReasonReplicaSetUpdated = "ReplicaSetUpdated"
	// Progressing False: no progress for progressDeadlineSeconds.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// Available: at least replicas-maxUnavailable pods are available.
	ReasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	// Available False: fewer than replicas-maxUnavailable are.
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	// Progressing Unknown: the rollout is paused.
	ReasonDeploymentPaused = "DeploymentPaused"
	// Progressing Unknown: the rollout was resumed and has not moved yet.
	ReasonDeploymentResumed = "DeploymentResumed"
)

// deploymentStatus is the status a sync computes and whether it says the
// rollout is complete.
type deploymentStatus struct {
	api.DeploymentStatus
	Complete bool
}

// status computes the Deployment's status from its ReplicaSets. wait, if
// positive, is when the progress deadline falls.
func (r *DeploymentReconciler) status(d *api.Deployment, newRS *api.ReplicaSet, old []*api.ReplicaSet, maxUnavailable int32, progressed bool) (deploymentStatus, time.Duration) {
	now := metav1.NewTime(r.clock.Now())
	replicas := replicasOf(d.Spec.Replicas)
	st := deploymentStatus{DeploymentStatus: api.DeploymentStatus{
		ObservedGeneration: d.Generation,
		CollisionCount:     d.Status.CollisionCount,
		Conditions:         append([]api.WorkloadCondition(nil), d.Status.Conditions...),
	}}
	all := old
	if newRS != nil {
		all = append(append([]*api.ReplicaSet(nil), old...), newRS)
		st.UpdatedReplicas = newRS.Status.Replicas
	}
	for _, rs := range all {
		st.Replicas += rs.Status.Replicas
		st.ReadyReplicas += rs.Status.ReadyReplicas
		st.AvailableReplicas += rs.Status.AvailableReplicas
	}
	st.UnavailableReplicas = max(replicas-st.AvailableReplicas, 0)

	if st.AvailableReplicas >= replicas-maxUnavailable {
		setCondition(&st.DeploymentStatus, api.DeploymentAvailable, api.ConditionTrue, ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", now)
	} else {
		setCondition(&st.DeploymentStatus, api.DeploymentAvailable, api.ConditionFalse, ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.", now)
	}

	copyReplicaFailure(&st.DeploymentStatus, newRS, old)

	rsName := ""
	if newRS != nil {
		rsName = newRS.Name
	}
	st.Complete = newRS != nil && st.UpdatedReplicas == replicas && st.Replicas == replicas &&
		st.AvailableReplicas == replicas && replicasOf(newRS.Spec.Replicas) == replicas
	if d.Spec.ProgressDeadlineSeconds == nil {
		return st, 0
	}
	pausedCondition(&st.DeploymentStatus, d.Spec.Paused, now)
	if d.Spec.Paused {
		return st, 0
	}
	deadline := time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
	cur := findCondition(st.Conditions, api.DeploymentProgressing)
	switch {
	case st.Complete:
		setCondition(&st.DeploymentStatus, api.DeploymentProgressing, api.ConditionTrue, ReasonNewReplicaSetAvailable,
			fmt.Sprintf("ReplicaSet %q has successfully progressed.", rsName), now)
		return st, 0
	case progressed || madeProgress(&d.Status, &st.DeploymentStatus):
		c := api.WorkloadCondition{
			Type: api.DeploymentProgressing, Status: api.ConditionTrue, Reason: ReasonReplicaSetUpdated,
			Message:        fmt.Sprintf("ReplicaSet %q is progressing.", rsName),
			LastUpdateTime: now, LastTransitionTime: now,
		}
		if cur != nil && cur.Status == api.ConditionTrue {
			c.LastTransitionTime = cur.LastTransitionTime
		}
		removeCondition(&st.DeploymentStatus, api.DeploymentProgressing)
		st.Conditions = append(st.Conditions, c)
		return st, deadline
	case cur != nil && cur.Reason == ReasonProgressDeadlineExceeded:
		return st, 0
	case cur != nil && cur.Status == api.ConditionTrue:
		left := cur.LastUpdateTime.Add(deadline).Sub(now.Time)
		if left > 0 {
			return st, left
		}
		setCondition(&st.DeploymentStatus, api.DeploymentProgressing, api.ConditionFalse, ReasonProgressDeadlineExceeded,
			fmt.Sprintf("ReplicaSet %q has timed out progressing.", rsName), now)
	}
	return st, 0
}

// copyReplicaFailure carries a ReplicaSet's ReplicaFailure condition (the new
// one's first, else the first old one's) onto the Deployment, and removes
// the Deployment's once none of them has it, as Kubernetes'
// syncRolloutStatus does with getReplicaFailures.
func copyReplicaFailure(st *api.DeploymentStatus, newRS *api.ReplicaSet, old []*api.ReplicaSet) {
	all := old
	if newRS != nil {
		all = append([]*api.ReplicaSet{newRS}, old...)
	}
	for _, rs := range all {
		if c := findCondition(rs.Status.Conditions, api.ReplicaFailure); c != nil {
			cur := findCondition(st.Conditions, api.ReplicaFailure)
			if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
				return
			}
			removeCondition(st, api.ReplicaFailure)
			st.Conditions = append(st.Conditions, api.WorkloadCondition{
				Type: api.ReplicaFailure, Status: c.Status, Reason: c.Reason, Message: c.Message,
				LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime,
			})
			return
		}
	}
	removeCondition(st, api.ReplicaFailure)
}

// pausedCondition says in the Progressing condition that the rollout is
// paused, or was resumed, as Kubernetes' checkPausedConditions; a
// deadline exceeded is left standing.
func pausedCondition(st *api.DeploymentStatus, paused bool, now metav1.Time) {
	cur := findCondition(st.Conditions, api.DeploymentProgressing)
	if cur != nil && cur.Reason == ReasonProgressDeadlineExceeded {
		return
	}
	wasPaused := cur != nil && cur.Reason == ReasonDeploymentPaused
	switch {
	case paused && !wasPaused:
		setCondition(st, api.DeploymentProgressing, api.ConditionUnknown, ReasonDeploymentPaused, "Deployment is paused", now)
	case !paused && wasPaused:
		setCondition(st, api.DeploymentProgressing, api.ConditionUnknown, ReasonDeploymentResumed, "Deployment is resumed", now)
	}
}

// madeProgress reports whether the pods moved toward the template since
// the last status, as Kubernetes' DeploymentProgressing.
func madeProgress(old, cur *api.DeploymentStatus) bool {
	oldOld := old.Replicas - old.UpdatedReplicas
	curOld := cur.Replicas - cur.UpdatedReplicas
	return cur.UpdatedReplicas > old.UpdatedReplicas || curOld < oldOld ||
		cur.ReadyReplicas > old.ReadyReplicas || cur.AvailableReplicas > old.AvailableReplicas
}

func findCondition(cs []api.WorkloadCondition, t string) *api.WorkloadCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

func removeCondition(st *api.DeploymentStatus, t string) {
	out := st.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

// setCondition sets a condition as Kubernetes' SetDeploymentCondition:
// unchanged if status and reason are, keeping the transition time if only
// the reason moved.
func setCondition(st *api.DeploymentStatus, t string, status api.ConditionStatus, reason, msg string, now metav1.Time) {
	c := api.WorkloadCondition{Type: t, Status: status, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
	cur := findCondition(st.Conditions, t)
	if cur != nil && cur.Status == status && cur.Reason == reason {
		return
	}
	if cur != nil && cur.Status == status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, t)
	st.Conditions = append(st.Conditions, c)
}

// writeStatus stores st if it differs from the Deployment's status, and
// the revision of newRS if the Deployment does not carry it yet.
func (r *DeploymentReconciler) writeStatus(ctx context.Context, d *api.Deployment, st api.DeploymentStatus, newRS *api.ReplicaSet) error {
	// The Deployment carries the revision of its newest ReplicaSet, as
	// Kubernetes' controller writes it with the status: kubectl rollout
	// undo patches it back along with the template.
	revision := ""
	if newRS != nil {
		revision = newRS.Annotations[AnnotationRevision]
	}
	setRevision := revision != "" && d.Annotations[AnnotationRevision] != revision
	if !setRevision && equality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	// A shallow copy: it shares the stored Deployment's metadata and spec,
	// which nothing changes in place (stored objects are never changed),
	// so that a status write costs a struct, not a copy of the template.
	c := new(api.Deployment)
	*c = *d
	c.Status = st
	if setRevision {
		c.Annotations = maps.Clone(d.Annotations)
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[AnnotationRevision] = revision
	}
	if _, err := r.store.Update(ctx, c); err != nil {
		return fmt.Errorf("update status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

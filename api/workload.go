package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true

// ReplicationController keeps a number of pods matching a selector.
type ReplicationController struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state: how many pods of which template.
	Spec ReplicationControllerSpec `json:"spec,omitempty"`
	// Status is what the replication controller counts of the pods; only the
	// status subresource writes it.
	Status ReplicationControllerStatus `json:"status,omitempty"`
}

// ReplicationControllerSpec is the desired state of a ReplicationController.
type ReplicationControllerSpec struct {
	// Replicas is the number of pods to keep, 1 by default.
	Replicas *int32 `json:"replicas,omitempty"`
	// MinReadySeconds is how long a pod must have been ready to count as
	// available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// Selector lists the labels of the pods to keep, every one with the same
	// value; the template's labels by default, which it must match.
	Selector map[string]string `json:"selector,omitempty"`
	// Template is the pod made to bring the count up.
	Template *PodTemplateSpec `json:"template,omitempty"`
}

// ReplicationControllerStatus reports a ReplicationController's pods.
type ReplicationControllerStatus struct {
	// Replicas is the number of pods the controller keeps that have not
	// ended or been deleted.
	Replicas int32 `json:"replicas"`
	// FullyLabeledReplicas counts those of them that carry every label of
	// the template.
	FullyLabeledReplicas int32 `json:"fullyLabeledReplicas,omitempty"`
	// ReadyReplicas counts those of them that are ready.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas counts those of them ready for at least
	// minReadySeconds.
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// ObservedGeneration is the generation of the spec the status was
	// counted for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions hold ReplicaFailure while pods cannot be created or deleted
	// (a quota, a namespace being deleted).
	// +listType=map
	// +listMapKey=type
	Conditions []WorkloadCondition `json:"conditions,omitempty"`
}

// WorkloadCondition is a condition of a ReplicationController, ReplicaSet
// or Deployment.
type WorkloadCondition struct {
	// Type is ReplicaFailure, or for a Deployment Available or Progressing.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// LastUpdateTime is when the condition was last written.
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is when status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is why, in one CamelCase word, such as
	// ProgressDeadlineExceeded.
	Reason string `json:"reason,omitempty"`
	// Message says why in words.
	Message string `json:"message,omitempty"`
}

// Workload condition types.
const (
	ReplicaFailure        = "ReplicaFailure"
	DeploymentAvailable   = "Available"
	DeploymentProgressing = "Progressing"
)

// +kubebuilder:object:root=true

// ReplicaSet keeps a number of pods matching a label selector.
type ReplicaSet struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state: how many pods of which template.
	Spec ReplicaSetSpec `json:"spec,omitempty"`
	// Status is what the replica set controller counts of the pods; only the
	// status subresource writes it.
	Status ReplicaSetStatus `json:"status,omitempty"`
}

// ReplicaSetSpec is the desired state of a ReplicaSet.
type ReplicaSetSpec struct {
	// Replicas is the number of pods to keep, 1 by default.
	Replicas *int32 `json:"replicas,omitempty"`
	// MinReadySeconds is how long a pod must have been ready to count as
	// available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// Selector picks the pods the ReplicaSet keeps; it may not be empty,
	// must match the template's labels and may not change.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the pod made to bring the count up.
	Template PodTemplateSpec `json:"template,omitempty"`
}

// ReplicaSetStatus reports a ReplicaSet's pods.
type ReplicaSetStatus struct {
	// Replicas is the number of pods the ReplicaSet keeps that have not
	// ended or been deleted.
	Replicas int32 `json:"replicas"`
	// FullyLabeledReplicas counts those of them that carry every label of
	// the template.
	FullyLabeledReplicas int32 `json:"fullyLabeledReplicas,omitempty"`
	// ReadyReplicas counts those of them that are ready.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas counts those of them ready for at least
	// minReadySeconds.
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// TerminatingReplicas counts the pods the ReplicaSet keeps that are
	// being deleted and have not ended yet, as Kubernetes' field of that
	// name: a Recreate rollout waits for them to go.
	TerminatingReplicas int32 `json:"terminatingReplicas,omitempty"`
	// ObservedGeneration is the generation of the spec the status was
	// counted for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions hold ReplicaFailure while pods cannot be created or deleted
	// (a quota, a namespace being deleted).
	// +listType=map
	// +listMapKey=type
	Conditions []WorkloadCondition `json:"conditions,omitempty"`
}

// LabelPodTemplateHash tells the ReplicaSets of one Deployment apart: it is
// on each ReplicaSet, its selector and its pods, with the hash of the
// template the ReplicaSet runs, as in Kubernetes.
const LabelPodTemplateHash = "pod-template-hash"

// AnnotationDeploymentRevision numbers a Deployment's ReplicaSets in the
// order their templates were rolled out, as in Kubernetes, so that the
// history can be trimmed oldest first and rolled back.
const AnnotationDeploymentRevision = "deployment.kubernetes.io/revision"

// The annotations of a Deployment's rollout bookkeeping, as Kubernetes
// names them: the replicas the Deployment had, and could surge to, when a
// ReplicaSet was last scaled, which proportional scaling reads; and
// kubectl's record of the configuration last applied.
const (
	AnnotationDesiredReplicas = "deployment.kubernetes.io/desired-replicas"
	AnnotationMaxReplicas     = "deployment.kubernetes.io/max-replicas"
	AnnotationRevisionHistory = "deployment.kubernetes.io/revision-history"
	// AnnotationLastAppliedConfig holds an object's manifest as it was
	// last applied, kubectl's annotation, so that `berth apply` and
	// `kubectl apply` agree on what was applied before: a field that was
	// in the last manifest and is gone from the new one is removed from
	// the object, while fields nobody applied are kept.
	AnnotationLastAppliedConfig = "kubectl.kubernetes.io/last-applied-configuration"
)

// DeploymentOwnAnnotation reports whether an annotation of a Deployment is
// its own rather than its template's: every other one is copied to the
// ReplicaSet of the template, and back to the Deployment on a rollback, as
// Kubernetes' skipCopyAnnotation, so that kubectl rollout history shows
// each revision's change-cause. berth's source and prune annotations are
// the Deployment's own too: on a ReplicaSet they would make it the
// source's, to be pruned.
func DeploymentOwnAnnotation(key string) bool {
	switch key {
	case AnnotationLastAppliedConfig, AnnotationDeploymentRevision, AnnotationRevisionHistory,
		AnnotationDesiredReplicas, AnnotationMaxReplicas, "deprecated.deployment.rollback.to",
		AnnotationSource, AnnotationPrune:
		return true
	}
	return false
}

// +kubebuilder:object:root=true

// Deployment rolls a pod template out through ReplicaSets.
type Deployment struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state: the pod template, how many, and how to roll
	// a new template out.
	Spec DeploymentSpec `json:"spec,omitempty"`
	// Status is what the deployment controller reports of the rollout; only
	// the status subresource writes it.
	Status DeploymentStatus `json:"status,omitempty"`
}

// DeploymentSpec is the desired state of a Deployment.
type DeploymentSpec struct {
	// Replicas is the number of pods to run, 1 by default.
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector picks the Deployment's pods; it may not be empty, must match
	// the template's labels and may not change.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the pod to run. A change of it is rolled out through a new
	// ReplicaSet, named for the template's hash.
	Template PodTemplateSpec `json:"template"`
	// Strategy says how pods of an older template are replaced.
	Strategy DeploymentStrategy `json:"strategy,omitempty"`
	// MinReadySeconds is how long a pod must have been ready to count as
	// available, which paces a rolling update.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// RevisionHistoryLimit is how many old ReplicaSets, scaled to zero, are
	// kept for rollback, 10 by default.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// Paused stops the rollout: a new template is not rolled out until it is
	// unset. A change of replicas still reaches a single active ReplicaSet;
	// several are left as they are.
	Paused bool `json:"paused,omitempty"`
	// ProgressDeadlineSeconds is how long a rollout may go without progress
	// before the Progressing condition turns False
	// (ProgressDeadlineExceeded), 600 by default. Nothing is rolled back.
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// DeploymentStrategyType is how a Deployment replaces pods.
type DeploymentStrategyType string

// Deployment strategies.
const (
	RecreateDeploymentStrategyType      DeploymentStrategyType = "Recreate"
	RollingUpdateDeploymentStrategyType DeploymentStrategyType = "RollingUpdate"
)

// DeploymentStrategy describes how to replace pods.
type DeploymentStrategy struct {
	// Type is RollingUpdate (the default), which replaces pods a few at a
	// time, or Recreate, which removes every old pod before the new ones are
	// made.
	Type DeploymentStrategyType `json:"type,omitempty"`
	// RollingUpdate bounds a rolling update; only with type RollingUpdate.
	RollingUpdate *RollingUpdateDeployment `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDeployment bounds a rolling update.
type RollingUpdateDeployment struct {
	// MaxUnavailable is how many pods, or what percentage of replicas
	// (rounded down), may be unavailable during the update; 25% by default.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxSurge is how many pods, or what percentage of replicas (rounded
	// up), may run beyond replicas during the update; 25% by default.
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// DeploymentStatus reports a Deployment's rollout.
type DeploymentStatus struct {
	// ObservedGeneration is the generation of the spec the status was
	// computed for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the number of pods of all the Deployment's ReplicaSets.
	Replicas int32 `json:"replicas,omitempty"`
	// UpdatedReplicas counts the pods of the current template.
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// ReadyReplicas counts the ready pods.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas counts the pods ready for at least minReadySeconds.
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// UnavailableReplicas is how many more pods must become available to
	// reach replicas.
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`
	// Conditions are Available (enough pods available, within
	// maxUnavailable) and Progressing (the rollout moves, is complete, or
	// missed its deadline).
	// +listType=map
	// +listMapKey=type
	Conditions []WorkloadCondition `json:"conditions,omitempty"`
	// CollisionCount counts the times a ReplicaSet name was taken by another
	// template; it changes the hash so the next name differs.
	CollisionCount *int32 `json:"collisionCount,omitempty"`
}

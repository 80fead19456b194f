package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true

// ReplicationController keeps a number of pods matching a selector.
type ReplicationController struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReplicationControllerSpec   `json:"spec,omitempty"`
	Status ReplicationControllerStatus `json:"status,omitempty"`
}

// ReplicationControllerSpec is the desired state of a ReplicationController.
type ReplicationControllerSpec struct {
	Replicas        *int32            `json:"replicas,omitempty"`
	MinReadySeconds int32             `json:"minReadySeconds,omitempty"`
	Selector        map[string]string `json:"selector,omitempty"`
	Template        *PodTemplateSpec  `json:"template,omitempty"`
}

// ReplicationControllerStatus reports a ReplicationController's pods.
type ReplicationControllerStatus struct {
	Replicas             int32               `json:"replicas"`
	FullyLabeledReplicas int32               `json:"fullyLabeledReplicas,omitempty"`
	ReadyReplicas        int32               `json:"readyReplicas,omitempty"`
	AvailableReplicas    int32               `json:"availableReplicas,omitempty"`
	ObservedGeneration   int64               `json:"observedGeneration,omitempty"`
	Conditions           []WorkloadCondition `json:"conditions,omitempty"`
}

// WorkloadCondition is a condition of a ReplicationController, ReplicaSet
// or Deployment.
type WorkloadCondition struct {
	Type               string          `json:"type"`
	Status             ConditionStatus `json:"status"`
	LastUpdateTime     metav1.Time     `json:"lastUpdateTime,omitempty"`
	LastTransitionTime metav1.Time     `json:"lastTransitionTime,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	Message            string          `json:"message,omitempty"`
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
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReplicaSetSpec   `json:"spec,omitempty"`
	Status ReplicaSetStatus `json:"status,omitempty"`
}

// ReplicaSetSpec is the desired state of a ReplicaSet.
type ReplicaSetSpec struct {
	Replicas        *int32                `json:"replicas,omitempty"`
	MinReadySeconds int32                 `json:"minReadySeconds,omitempty"`
	Selector        *metav1.LabelSelector `json:"selector"`
	Template        PodTemplateSpec       `json:"template,omitempty"`
}

// ReplicaSetStatus reports a ReplicaSet's pods.
type ReplicaSetStatus struct {
	Replicas             int32               `json:"replicas"`
	FullyLabeledReplicas int32               `json:"fullyLabeledReplicas,omitempty"`
	ReadyReplicas        int32               `json:"readyReplicas,omitempty"`
	AvailableReplicas    int32               `json:"availableReplicas,omitempty"`
	ObservedGeneration   int64               `json:"observedGeneration,omitempty"`
	Conditions           []WorkloadCondition `json:"conditions,omitempty"`
}

// LabelPodTemplateHash tells the ReplicaSets of one Deployment apart: it is
// on each ReplicaSet, its selector and its pods, with the hash of the
// template the ReplicaSet runs, as in Kubernetes.
const LabelPodTemplateHash = "pod-template-hash"

// AnnotationDeploymentRevision numbers a Deployment's ReplicaSets in the
// order their templates were rolled out, as in Kubernetes, so that the
// history can be trimmed oldest first and rolled back.
const AnnotationDeploymentRevision = "deployment.kubernetes.io/revision"

// +kubebuilder:object:root=true

// Deployment rolls a pod template out through ReplicaSets.
type Deployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DeploymentSpec   `json:"spec,omitempty"`
	Status DeploymentStatus `json:"status,omitempty"`
}

// DeploymentSpec is the desired state of a Deployment.
type DeploymentSpec struct {
	Replicas                *int32                `json:"replicas,omitempty"`
	Selector                *metav1.LabelSelector `json:"selector"`
	Template                PodTemplateSpec       `json:"template"`
	Strategy                DeploymentStrategy    `json:"strategy,omitempty"`
	MinReadySeconds         int32                 `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit    *int32                `json:"revisionHistoryLimit,omitempty"`
	Paused                  bool                  `json:"paused,omitempty"`
	ProgressDeadlineSeconds *int32                `json:"progressDeadlineSeconds,omitempty"`
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
	Type          DeploymentStrategyType   `json:"type,omitempty"`
	RollingUpdate *RollingUpdateDeployment `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDeployment bounds a rolling update.
type RollingUpdateDeployment struct {
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	MaxSurge       *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// DeploymentStatus reports a Deployment's rollout.
type DeploymentStatus struct {
	ObservedGeneration  int64               `json:"observedGeneration,omitempty"`
	Replicas            int32               `json:"replicas,omitempty"`
	UpdatedReplicas     int32               `json:"updatedReplicas,omitempty"`
	ReadyReplicas       int32               `json:"readyReplicas,omitempty"`
	AvailableReplicas   int32               `json:"availableReplicas,omitempty"`
	UnavailableReplicas int32               `json:"unavailableReplicas,omitempty"`
	Conditions          []WorkloadCondition `json:"conditions,omitempty"`
	CollisionCount      *int32              `json:"collisionCount,omitempty"`
}

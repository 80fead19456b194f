package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true

// StatefulSet runs pods with stable identities: NAME-0 … NAME-(N-1), each
// with a hostname under the governing Service and claims of its own made
// from volumeClaimTemplates, which outlive the pod.
type StatefulSet struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state: the pods, their claims and how a new
	// template replaces them.
	Spec StatefulSetSpec `json:"spec,omitempty"`
	// Status is what the statefulset controller counts of the pods; only the
	// status subresource writes it.
	Status StatefulSetStatus `json:"status,omitempty"`
}

// PodManagementPolicyType says how a StatefulSet creates and deletes pods.
type PodManagementPolicyType string

// Pod management policies.
const (
	// OrderedReadyPodManagement creates pods in increasing order and waits
	// for each to be ready before the next, and deletes them in decreasing
	// order.
	OrderedReadyPodManagement PodManagementPolicyType = "OrderedReady"
	// ParallelPodManagement creates and deletes pods at once.
	ParallelPodManagement PodManagementPolicyType = "Parallel"
)

// StatefulSetUpdateStrategyType is how a StatefulSet replaces pods of an
// older template.
type StatefulSetUpdateStrategyType string

// StatefulSet update strategies.
const (
	// RollingUpdateStatefulSetStrategyType replaces pods from the highest
	// ordinal down to the partition.
	RollingUpdateStatefulSetStrategyType StatefulSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteStatefulSetStrategyType replaces a pod only when a user
	// deletes it.
	OnDeleteStatefulSetStrategyType StatefulSetUpdateStrategyType = "OnDelete"
)

// StatefulSetUpdateStrategy says how a new template replaces pods.
type StatefulSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete.
	Type StatefulSetUpdateStrategyType `json:"type,omitempty"`
	// RollingUpdate bounds a rolling update; only with type RollingUpdate.
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy bounds a StatefulSet's rolling update.
type RollingUpdateStatefulSetStrategy struct {
	// Partition is the lowest ordinal updated: pods below it keep the
	// current revision, 0 by default.
	Partition *int32 `json:"partition,omitempty"`
	// MaxUnavailable is how many pods, or what percentage of replicas
	// (rounded up), may be unavailable during the update, 1 by default;
	// never 0. With OrderedReady pods are still replaced one at a time.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// PersistentVolumeClaimRetentionPolicyType says whether the claims made
// from volumeClaimTemplates are kept.
type PersistentVolumeClaimRetentionPolicyType string

// Claim retention policies.
const (
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// StatefulSetPersistentVolumeClaimRetentionPolicy says what becomes of a
// StatefulSet's claims when it is deleted or scaled down.
type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	// WhenDeleted is Retain (the default) or Delete: the claims go with the
	// StatefulSet (they are owned by it and the garbage collector deletes
	// them).
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`
	// WhenScaled is Retain (the default) or Delete: the claims of the pods
	// removed by a scale down go with them.
	WhenScaled PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty"`
}

// StatefulSetOrdinals numbers a StatefulSet's pods.
type StatefulSetOrdinals struct {
	// Start is the first ordinal: the pods are NAME-start …
	// NAME-(start+replicas-1). 0 by default.
	Start int32 `json:"start"`
}

// StatefulSetSpec is the desired state of a StatefulSet.
type StatefulSetSpec struct {
	// Replicas is the number of pods to run, 1 by default.
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector picks the StatefulSet's pods; it may not be empty, must match
	// the template's labels and may not change.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the pod each ordinal runs; its restartPolicy must be
	// Always.
	Template PodTemplateSpec `json:"template"`
	// VolumeClaimTemplates are the claims each pod gets, named
	// TEMPLATE-NAME-ORDINAL, mounted as the volume of the template's name.
	// +listType=atomic
	VolumeClaimTemplates []PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// ServiceName is the headless Service that governs the pods' DNS
	// names: NAME-ORDINAL.SERVICE.NAMESPACE.svc.cluster.local.
	ServiceName string `json:"serviceName,omitempty"`
	// PodManagementPolicy is OrderedReady (the default) or Parallel.
	PodManagementPolicy PodManagementPolicyType `json:"podManagementPolicy,omitempty"`
	// UpdateStrategy says how a new template replaces pods.
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// RevisionHistoryLimit is how many ControllerRevisions beyond the
	// current and updated ones are kept for rollback, 10 by default.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// MinReadySeconds is how long a pod must have been ready to count as
	// available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// PersistentVolumeClaimRetentionPolicy says whether the claims outlive
	// the StatefulSet and a scale down; Retain both by default.
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	// Ordinals numbers the pods from another start than 0.
	Ordinals *StatefulSetOrdinals `json:"ordinals,omitempty"`
}

// StatefulSetStatus reports a StatefulSet's pods and revisions.
type StatefulSetStatus struct {
	// ObservedGeneration is the generation of the spec the status was
	// counted for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the number of pods the controller made that exist.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas counts those of them that are ready.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// CurrentReplicas counts the pods of currentRevision.
	CurrentReplicas int32 `json:"currentReplicas,omitempty"`
	// UpdatedReplicas counts the pods of updateRevision.
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// CurrentRevision is the ControllerRevision of the pods below the
	// rollout.
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the ControllerRevision of the current template.
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CollisionCount counts the times a revision's name was taken by
	// another template; it changes the hash so the next name differs.
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// Conditions of the StatefulSet.
	// +listType=map
	// +listMapKey=type
	Conditions []StatefulSetCondition `json:"conditions,omitempty"`
	// AvailableReplicas counts the pods ready for at least minReadySeconds.
	AvailableReplicas int32 `json:"availableReplicas"`
}

// StatefulSetCondition is a condition of a StatefulSet.
type StatefulSetCondition struct {
	// Type of the condition.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// LastTransitionTime is when status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is why, in one CamelCase word.
	Reason string `json:"reason,omitempty"`
	// Message says why in words.
	Message string `json:"message,omitempty"`
}

// The labels a StatefulSet's pods carry, as Kubernetes names them: the
// pod's own name (a Service may select one pod by it) and its ordinal.
const (
	LabelStatefulSetPodName = "statefulset.kubernetes.io/pod-name"
	LabelPodIndex           = "apps.kubernetes.io/pod-index"
	// LabelControllerRevisionHash names the revision a StatefulSet's or
	// DaemonSet's pod was made from.
	LabelControllerRevisionHash = "controller-revision-hash"
)

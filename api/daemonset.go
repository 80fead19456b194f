package api

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true

// DaemonSet runs one pod on every node its template's node selector,
// affinity and tolerations admit: a node joining gets its pod, a node
// leaving loses it.
type DaemonSet struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state: the pod and how a new template replaces
	// it.
	Spec DaemonSetSpec `json:"spec,omitempty"`
	// Status is what the daemonset controller counts of the nodes and
	// pods; only the status subresource writes it.
	Status DaemonSetStatus `json:"status,omitempty"`
}

// DaemonSetUpdateStrategyType is how a DaemonSet replaces pods of an older
// template.
type DaemonSetUpdateStrategyType string

// DaemonSet update strategies.
const (
	RollingUpdateDaemonSetStrategyType DaemonSetUpdateStrategyType = "RollingUpdate"
	OnDeleteDaemonSetStrategyType      DaemonSetUpdateStrategyType = "OnDelete"
)

// DaemonSetUpdateStrategy says how a new template replaces pods.
type DaemonSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete.
	Type DaemonSetUpdateStrategyType `json:"type,omitempty"`
	// RollingUpdate bounds a rolling update; only with type RollingUpdate.
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet bounds a DaemonSet's rolling update.
type RollingUpdateDaemonSet struct {
	// MaxUnavailable is how many nodes, or what percentage of them
	// (rounded up), may be without an available pod during the update, 1
	// by default. Not 0 when maxSurge is 0.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxSurge is how many nodes, or what percentage of them (rounded up),
	// may run a new pod beside the old one until the new one is
	// available, 0 by default. Not 0 when maxUnavailable is 0.
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// DaemonSetSpec is the desired state of a DaemonSet.
type DaemonSetSpec struct {
	// Selector picks the DaemonSet's pods; it may not be empty, must match
	// the template's labels and may not change.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the pod every node runs; its restartPolicy must be
	// Always.
	Template PodTemplateSpec `json:"template"`
	// UpdateStrategy says how a new template replaces pods.
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// MinReadySeconds is how long a pod must have been ready to count as
	// available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// RevisionHistoryLimit is how many old ControllerRevisions are kept
	// for rollback, 10 by default.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// DaemonSetStatus reports a DaemonSet's nodes and pods.
type DaemonSetStatus struct {
	// CurrentNumberScheduled counts the nodes that should run the pod and
	// run at least one.
	CurrentNumberScheduled int32 `json:"currentNumberScheduled"`
	// NumberMisscheduled counts the nodes that run the pod and should not.
	NumberMisscheduled int32 `json:"numberMisscheduled"`
	// DesiredNumberScheduled counts the nodes that should run the pod.
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`
	// NumberReady counts the nodes that should run the pod and run a ready
	// one.
	NumberReady int32 `json:"numberReady"`
	// ObservedGeneration is the generation of the spec the status was
	// counted for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// UpdatedNumberScheduled counts the nodes that run a pod of the
	// current template.
	UpdatedNumberScheduled int32 `json:"updatedNumberScheduled,omitempty"`
	// NumberAvailable counts the nodes that should run the pod and run one
	// ready for at least minReadySeconds.
	NumberAvailable int32 `json:"numberAvailable,omitempty"`
	// NumberUnavailable counts the nodes that should run the pod and run
	// none available.
	NumberUnavailable int32 `json:"numberUnavailable,omitempty"`
	// CollisionCount counts the times a revision's name was taken by
	// another template; it changes the hash so the next name differs.
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// Conditions of the DaemonSet.
	// +listType=map
	// +listMapKey=type
	Conditions []DaemonSetCondition `json:"conditions,omitempty"`
}

// DaemonSetCondition is a condition of a DaemonSet.
type DaemonSetCondition struct {
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

// +kubebuilder:object:root=true

// ControllerRevision is one revision of a StatefulSet's or DaemonSet's pod
// template, kept for rollback: `kubectl rollout history` lists them and
// `kubectl rollout undo` patches the owner with Data. Its data never
// changes once made.
type ControllerRevision struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Data is the revision: a strategic merge patch that puts the
	// template back, {"spec":{"template":{…,"$patch":"replace"}}}.
	Data runtime.RawExtension `json:"data,omitempty"`
	// Revision numbers the revisions of one owner in the order they were
	// rolled out.
	Revision int64 `json:"revision"`
}

// Template reads the pod template back out of the revision's data: what
// the controllers compare pods with and what a rollback puts back.
func (r *ControllerRevision) Template() (*PodTemplateSpec, error) {
	var d struct {
		Spec struct {
			Template PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(r.Data.Raw, &d); err != nil {
		return nil, fmt.Errorf("controllerrevision %s/%s: data: %w", r.Namespace, r.Name, err)
	}
	return &d.Spec.Template, nil
}

// LabelControllerRevisionHashKey is the label a ControllerRevision carries
// with the hash of its data, as Kubernetes' controller history names it.
const LabelControllerRevisionHashKey = "controller.kubernetes.io/hash"

// TaintNodeNetworkUnavailable is the taint of a node whose network is not
// set up; a DaemonSet's pods with hostNetwork tolerate it.
const TaintNodeNetworkUnavailable = "node.kubernetes.io/network-unavailable"

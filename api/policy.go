package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	sjson "sigs.k8s.io/json"
)

// +kubebuilder:object:root=true

// PodDisruptionBudget is a policy/v1 PodDisruptionBudget: how many of the
// pods it selects must stay available while they are evicted one by one,
// as `kubectl drain` evicts a node's pods. The disruption controller
// counts the pods into its status, and the pods/eviction subresource
// refuses an eviction the status does not allow.
type PodDisruptionBudget struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which pods the budget guards and how many must stay.
	Spec PodDisruptionBudgetSpec `json:"spec,omitempty"`
	// Status is what the disruption controller counts of the pods; only
	// the status subresource (and an eviction) writes it.
	Status PodDisruptionBudgetStatus `json:"status,omitempty"`
}

// PodDisruptionBudgetSpec is what a PodDisruptionBudget guards.
type PodDisruptionBudgetSpec struct {
	// MinAvailable: an eviction is allowed if at least this many of the
	// selected pods (a number, or a percentage of the pods their
	// controllers want) are still available after it. Not with
	// maxUnavailable.
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
	// Selector picks the pods the budget guards. A null selector selects
	// no pods; an empty one ({}) every pod of the namespace.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// MaxUnavailable: an eviction is allowed if at most this many of the
	// selected pods (a number, or a percentage of the pods their
	// controllers want) are unavailable after it. Not with minAvailable.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// UnhealthyPodEvictionPolicy says when a running pod that is not ready
	// may be evicted: IfHealthyBudget (the default) only while the budget
	// has its healthy pods, AlwaysAllow always.
	UnhealthyPodEvictionPolicy *UnhealthyPodEvictionPolicyType `json:"unhealthyPodEvictionPolicy,omitempty"`
}

// UnhealthyPodEvictionPolicyType says when unready pods may be evicted.
type UnhealthyPodEvictionPolicyType string

// The unhealthy pod eviction policies.
const (
	// IfHealthyBudget: a running pod that is not ready may be evicted only
	// while the budget's currentHealthy is at least its desiredHealthy.
	IfHealthyBudget UnhealthyPodEvictionPolicyType = "IfHealthyBudget"
	// AlwaysAllow: a running pod that is not ready may always be evicted.
	AlwaysAllow UnhealthyPodEvictionPolicyType = "AlwaysAllow"
)

// PodDisruptionBudgetStatus is what the disruption controller counted.
type PodDisruptionBudgetStatus struct {
	// ObservedGeneration is the generation of the spec the status was
	// counted for; an eviction waits (429) until it is the current one.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DisruptedPods maps the pods an eviction let go, but which the
	// controller has not yet seen deleted, to when that was; an entry
	// goes after two minutes if the pod is still there.
	DisruptedPods map[string]metav1.Time `json:"disruptedPods,omitempty"`
	// DisruptionsAllowed is how many pods may be evicted now.
	DisruptionsAllowed int32 `json:"disruptionsAllowed"`
	// CurrentHealthy counts the selected pods that are ready.
	CurrentHealthy int32 `json:"currentHealthy"`
	// DesiredHealthy is how many ready pods the budget wants.
	DesiredHealthy int32 `json:"desiredHealthy"`
	// ExpectedPods is how many pods the budget counts on: the selected
	// pods, or the replicas their controllers want.
	ExpectedPods int32 `json:"expectedPods"`
	// Conditions hold DisruptionAllowed: True with reason SufficientPods,
	// False with InsufficientPods or SyncFailed.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// The condition of a PodDisruptionBudget and its reasons, as Kubernetes
// names them.
const (
	DisruptionAllowedCondition = "DisruptionAllowed"
	// SyncFailedReason: the controller could not count the pods, so it
	// allows no disruption.
	SyncFailedReason = "SyncFailed"
	// SufficientPodsReason: enough pods are healthy to allow one to go.
	SufficientPodsReason = "SufficientPods"
	// InsufficientPodsReason: too few pods are healthy to allow one to go.
	InsufficientPodsReason = "InsufficientPods"
)

// DisruptionBudgetCause is the cause type of an eviction refused by a
// budget, in the 429's details.
const DisruptionBudgetCause metav1.CauseType = "DisruptionBudget"

// Eviction asks for a pod to be deleted within its disruption budgets:
// the body of POST …/pods/{name}/eviction, as policy/v1 (and v1beta1)
// has it. It is not stored, so it is not a kind of the registry.
//
// +kubebuilder:object:generate=false
type Eviction struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta names the pod to evict.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// DeleteOptions are the options of the pod's deletion.
	DeleteOptions *metav1.DeleteOptions `json:"deleteOptions,omitempty"`
}

// Selects reports whether a budget guards a pod of its namespace, as
// policy/v1 has it: a null selector selects no pod, an empty one every
// pod, and one that does not parse none.
func (b *PodDisruptionBudget) Selects(pod *Pod) bool {
	if b.Spec.Selector == nil || pod.Namespace != b.Namespace {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	return err == nil && sel.Matches(labels.Set(pod.Labels))
}

// SetDisruptionAllowed sets the budget's DisruptionAllowed condition from
// its disruptionsAllowed, as the disruption controller and an eviction
// that takes the last allowed disruption both must; a change of status
// is stamped with now.
func (b *PodDisruptionBudget) SetDisruptionAllowed(now time.Time) {
	c := metav1.Condition{
		Type:               DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             InsufficientPodsReason,
		ObservedGeneration: b.Status.ObservedGeneration,
		LastTransitionTime: metav1.NewTime(now),
	}
	if b.Status.DisruptionsAllowed > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, SufficientPodsReason
	}
	apimeta.SetStatusCondition(&b.Status.Conditions, c)
}

// DecodeEviction reads the body of a pod's eviction, JSON or YAML,
// strictly, as every body is read: an unknown or repeated field, or a
// value of the wrong type, is an error naming it. A body with neither apiVersion nor
// kind is taken as a policy/v1 Eviction, as Kubernetes takes a body
// whose type the path says; with them, they must say Eviction of
// policy/v1 or policy/v1beta1, which read the same.
func DecodeEviction(data []byte) (*Eviction, error) {
	if !json.Valid(data) {
		j, err := yamlToJSON(data, true)
		if err != nil {
			return nil, fmt.Errorf("the body is neither JSON nor YAML: %s", strings.ReplaceAll(err.Error(), "\n", " "))
		}
		data = j
	}
	var e Eviction
	strict, err := sjson.UnmarshalStrict(data, &e, sjson.DisallowUnknownFields, sjson.DisallowDuplicateFields)
	if err != nil {
		return nil, fmt.Errorf("the body is not an Eviction: %w", err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, s := range strict {
			msgs[i] = s.Error()
		}
		return nil, fmt.Errorf("the Eviction is invalid: %s", strings.Join(msgs, "; "))
	}
	gvk := e.GroupVersionKind()
	switch {
	case gvk.Empty():
		e.SetGroupVersionKind(PolicyV1.WithKind("Eviction"))
	case gvk.Kind != "Eviction":
		return nil, fmt.Errorf("kind: Unsupported value: %q: the body of a pod's eviction is an Eviction", gvk.Kind)
	case gvk.GroupVersion() != PolicyV1 && gvk.GroupVersion() != PolicyV1Beta1:
		return nil, fmt.Errorf("apiVersion: Unsupported value: %q: supported values: %q, %q", e.APIVersion, PolicyV1.String(), PolicyV1Beta1.String())
	}
	return &e, nil
}

package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// Namespace groups namespaced objects.
type Namespace struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NamespaceSpec   `json:"spec,omitempty"`
	Status NamespaceStatus `json:"status,omitempty"`
}

// FinalizerName is a namespace finalizer.
type FinalizerName string

// FinalizerKubernetes holds a namespace until its contents are gone.
const FinalizerKubernetes FinalizerName = "kubernetes"

// NamespaceSpec holds a namespace's finalizers.
type NamespaceSpec struct {
	Finalizers []FinalizerName `json:"finalizers,omitempty"`
}

// NamespacePhase is Active or Terminating.
type NamespacePhase string

// Namespace phases.
const (
	NamespaceActive      NamespacePhase = "Active"
	NamespaceTerminating NamespacePhase = "Terminating"
)

// NamespaceStatus is the observed state of a namespace.
type NamespaceStatus struct {
	Phase NamespacePhase `json:"phase,omitempty"`
}

// +kubebuilder:object:root=true

// ServiceAccount is an identity for the pods of a namespace.
type ServiceAccount struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Secrets                      []ObjectReference      `json:"secrets,omitempty"`
	AutomountServiceAccountToken *bool                  `json:"automountServiceAccountToken,omitempty"`
	ImagePullSecrets             []LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// +kubebuilder:object:root=true

// ConfigMap holds configuration for pods.
type ConfigMap struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

// SecretType names the shape of a Secret's data.
type SecretType string

// Secret types.
const (
	SecretTypeOpaque SecretType = "Opaque"
)

// +kubebuilder:object:root=true

// Secret holds sensitive data for pods.
type Secret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
	Type       SecretType        `json:"type,omitempty"`
}

// +kubebuilder:object:root=true

// ResourceQuota caps what a namespace may hold.
type ResourceQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceQuotaSpec   `json:"spec,omitempty"`
	Status ResourceQuotaStatus `json:"status,omitempty"`
}

// ResourceQuotaSpec holds the hard limits.
type ResourceQuotaSpec struct {
	Hard ResourceList `json:"hard,omitempty"`
}

// ResourceQuotaStatus reports the limits and what is used.
type ResourceQuotaStatus struct {
	Hard ResourceList `json:"hard,omitempty"`
	Used ResourceList `json:"used,omitempty"`
}

// Quota resource names beyond the compute ones.
const (
	ResourceRequestsCPU            ResourceName = "requests.cpu"
	ResourceRequestsMemory         ResourceName = "requests.memory"
	ResourceLimitsCPU              ResourceName = "limits.cpu"
	ResourceLimitsMemory           ResourceName = "limits.memory"
	ResourceRequestsStorage        ResourceName = "requests.storage"
	ResourcePersistentVolumeClaims ResourceName = "persistentvolumeclaims"
	ResourceServices               ResourceName = "services"
	ResourceConfigMaps             ResourceName = "configmaps"
	ResourceSecrets                ResourceName = "secrets"
)

// +kubebuilder:object:root=true

// Event records something that happened to an object.
type Event struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	InvolvedObject ObjectReference `json:"involvedObject"`
	Reason         string          `json:"reason,omitempty"`
	Message        string          `json:"message,omitempty"`
	Source         EventSource     `json:"source,omitempty"`
	FirstTimestamp metav1.Time     `json:"firstTimestamp,omitempty"`
	LastTimestamp  metav1.Time     `json:"lastTimestamp,omitempty"`
	Count          int32           `json:"count,omitempty"`
	Type           string          `json:"type,omitempty"`
}

// EventSource names the component that recorded an event.
type EventSource struct {
	Component string `json:"component,omitempty"`
	Host      string `json:"host,omitempty"`
}

// Event types.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// Namespace groups namespaced objects.
type Namespace struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the namespace's finalizers.
	Spec NamespaceSpec `json:"spec,omitempty"`
	// Status holds the namespace's phase.
	Status NamespaceStatus `json:"status,omitempty"`
}

// FinalizerName is a namespace finalizer.
type FinalizerName string

// FinalizerKubernetes holds a namespace until its contents are gone.
const FinalizerKubernetes FinalizerName = "kubernetes"

// NamespaceSpec holds a namespace's finalizers.
type NamespaceSpec struct {
	// Finalizers hold a deleted namespace until the namespace controller has
	// deleted everything in it; kubernetes is set when the namespace is
	// made. They change only through the finalize subresource.
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
	// Phase is Active, or Terminating once the namespace is being deleted:
	// nothing new may be made in it then.
	Phase NamespacePhase `json:"phase,omitempty"`
}

// +kubebuilder:object:root=true

// ServiceAccount is an identity for the pods of a namespace.
type ServiceAccount struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Secrets are accepted and ignored: tokens are not kept in Secrets.
	// +listType=map
	// +listMapKey=name
	Secrets []ObjectReference `json:"secrets,omitempty"`
	// AutomountServiceAccountToken false gives the pods that run as this
	// account no token, unless a pod's own automountServiceAccountToken
	// says true.
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
	// ImagePullSecrets are accepted and ignored: the exec runtime pulls no
	// images.
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// +kubebuilder:object:root=true

// ConfigMap holds configuration for pods.
type ConfigMap struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Immutable, once true, keeps data and binaryData from changing and
	// itself from being unset.
	Immutable *bool `json:"immutable,omitempty"`
	// Data holds string values by key. Keys are letters, digits, "-", "_"
	// and "."; data and binaryData together hold at most 1MiB.
	Data map[string]string `json:"data,omitempty"`
	// BinaryData holds binary values by key, base64 in JSON, under keys data
	// does not use. Volumes and configMapKeyRef read it; envFrom does not.
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
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Immutable, once true, keeps data from changing and itself from being
	// unset.
	Immutable *bool `json:"immutable,omitempty"`
	// Data holds the secret values by key, base64 in JSON; with stringData
	// at most 1MiB.
	Data map[string][]byte `json:"data,omitempty"`
	// StringData holds values as plain strings, over data's of the same key.
	// A write through the API merges it into data and keeps none of it; a
	// Secret applied from a source keeps it, and the agent merges it when it
	// reads the Secret.
	StringData map[string]string `json:"stringData,omitempty"`
	// Type is Opaque by default; kubernetes.io/tls must hold tls.crt and
	// tls.key. Other types are kept unchecked. It may not change.
	Type SecretType `json:"type,omitempty"`
}

// +kubebuilder:object:root=true

// ResourceQuota caps what a namespace may hold.
type ResourceQuota struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the limits.
	Spec ResourceQuotaSpec `json:"spec,omitempty"`
	// Status holds the limits in force and what the namespace uses.
	Status ResourceQuotaStatus `json:"status,omitempty"`
}

// ResourceQuotaSpec holds the hard limits.
type ResourceQuotaSpec struct {
	// Hard caps what the namespace may hold, by resource: requests.cpu (or
	// cpu), requests.memory (or memory), limits.cpu, limits.memory,
	// requests.storage, pods, persistentvolumeclaims, services, configmaps
	// and secrets. A write that would go over is refused.
	Hard ResourceList `json:"hard,omitempty"`
}

// ResourceQuotaStatus reports the limits and what is used.
type ResourceQuotaStatus struct {
	// Hard is a copy of the spec's.
	Hard ResourceList `json:"hard,omitempty"`
	// Used is what the namespace uses of each limited resource, kept current
	// with every write.
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
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// InvolvedObject is the object the event is about; its kind and name are
	// required.
	InvolvedObject ObjectReference `json:"involvedObject"`
	// Reason is what happened, in one CamelCase word, such as Scheduled or
	// BackOff.
	Reason string `json:"reason,omitempty"`
	// Message says what happened in words.
	Message string `json:"message,omitempty"`
	// Source is the component, and for an agent's events the node, that
	// recorded the event.
	Source EventSource `json:"source,omitempty"`
	// FirstTimestamp is when the event was first recorded.
	FirstTimestamp metav1.Time `json:"firstTimestamp,omitempty"`
	// LastTimestamp is when it was last recorded; the event is deleted an
	// hour later (--event-ttl).
	LastTimestamp metav1.Time `json:"lastTimestamp,omitempty"`
	// Count is how many times it was recorded: a repeat within ten minutes
	// counts here instead of making another Event.
	Count int32 `json:"count,omitempty"`
	// Type is Normal or Warning.
	Type string `json:"type,omitempty"`
}

// EventSource names the component that recorded an event.
type EventSource struct {
	// Component names the controller or agent that recorded the event.
	Component string `json:"component,omitempty"`
	// Host is the node whose agent recorded the event; empty for the control
	// plane's.
	Host string `json:"host,omitempty"`
}

// Event types.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

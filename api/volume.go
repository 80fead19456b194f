package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// PersistentVolume is a piece of storage that a claim can bind.
type PersistentVolume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PersistentVolumeSpec   `json:"spec,omitempty"`
	Status PersistentVolumeStatus `json:"status,omitempty"`
}

// PersistentVolumeAccessMode says how a volume may be mounted.
type PersistentVolumeAccessMode string

// Access modes.
const (
	ReadWriteOnce    PersistentVolumeAccessMode = "ReadWriteOnce"
	ReadOnlyMany     PersistentVolumeAccessMode = "ReadOnlyMany"
	ReadWriteMany    PersistentVolumeAccessMode = "ReadWriteMany"
	ReadWriteOncePod PersistentVolumeAccessMode = "ReadWriteOncePod"
)

// PersistentVolumeReclaimPolicy says what happens to a released volume.
type PersistentVolumeReclaimPolicy string

// Reclaim policies.
const (
	PersistentVolumeReclaimRetain  PersistentVolumeReclaimPolicy = "Retain"
	PersistentVolumeReclaimDelete  PersistentVolumeReclaimPolicy = "Delete"
	PersistentVolumeReclaimRecycle PersistentVolumeReclaimPolicy = "Recycle"
)

// PersistentVolumeMode is Filesystem or Block.
type PersistentVolumeMode string

// Volume modes.
const (
	PersistentVolumeBlock      PersistentVolumeMode = "Block"
	PersistentVolumeFilesystem PersistentVolumeMode = "Filesystem"
)

// PersistentVolumeSpec describes a volume.
type PersistentVolumeSpec struct {
	Capacity                      ResourceList `json:"capacity,omitempty"`
	PersistentVolumeSource        `json:",inline"`
	AccessModes                   []PersistentVolumeAccessMode  `json:"accessModes,omitempty"`
	ClaimRef                      *ObjectReference              `json:"claimRef,omitempty"`
	PersistentVolumeReclaimPolicy PersistentVolumeReclaimPolicy `json:"persistentVolumeReclaimPolicy,omitempty"`
	StorageClassName              string                        `json:"storageClassName,omitempty"`
	MountOptions                  []string                      `json:"mountOptions,omitempty"`
	VolumeMode                    *PersistentVolumeMode         `json:"volumeMode,omitempty"`
	NodeAffinity                  *VolumeNodeAffinity           `json:"nodeAffinity,omitempty"`
}

// PersistentVolumeSource is where a volume's data lives.
type PersistentVolumeSource struct {
	HostPath *HostPathVolumeSource `json:"hostPath,omitempty"`
	Local    *LocalVolumeSource    `json:"local,omitempty"`
}

// LocalVolumeSource is a directory on one node.
type LocalVolumeSource struct {
	Path string `json:"path"`
}

// VolumeNodeAffinity restricts a volume to some nodes.
type VolumeNodeAffinity struct {
	Required *NodeSelector `json:"required,omitempty"`
}

// PersistentVolumePhase is the state of a volume.
type PersistentVolumePhase string

// Volume phases.
const (
	VolumePending   PersistentVolumePhase = "Pending"
	VolumeAvailable PersistentVolumePhase = "Available"
	VolumeBound     PersistentVolumePhase = "Bound"
	VolumeReleased  PersistentVolumePhase = "Released"
	VolumeFailed    PersistentVolumePhase = "Failed"
)

// PersistentVolumeStatus is the observed state of a volume.
type PersistentVolumeStatus struct {
	Phase                   PersistentVolumePhase `json:"phase,omitempty"`
	Message                 string                `json:"message,omitempty"`
	Reason                  string                `json:"reason,omitempty"`
	LastPhaseTransitionTime *metav1.Time          `json:"lastPhaseTransitionTime,omitempty"`
}

// +kubebuilder:object:root=true

// PersistentVolumeClaim is a request for storage.
type PersistentVolumeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PersistentVolumeClaimSpec   `json:"spec,omitempty"`
	Status PersistentVolumeClaimStatus `json:"status,omitempty"`
}

// VolumeResourceRequirements is a claim's request for capacity.
type VolumeResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

// PersistentVolumeClaimSpec describes the storage a claim wants.
type PersistentVolumeClaimSpec struct {
	AccessModes      []PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	Selector         *metav1.LabelSelector        `json:"selector,omitempty"`
	Resources        VolumeResourceRequirements   `json:"resources,omitempty"`
	VolumeName       string                       `json:"volumeName,omitempty"`
	StorageClassName *string                      `json:"storageClassName,omitempty"`
	VolumeMode       *PersistentVolumeMode        `json:"volumeMode,omitempty"`
}

// PersistentVolumeClaimPhase is the state of a claim.
type PersistentVolumeClaimPhase string

// Claim phases.
const (
	ClaimPending PersistentVolumeClaimPhase = "Pending"
	ClaimBound   PersistentVolumeClaimPhase = "Bound"
	ClaimLost    PersistentVolumeClaimPhase = "Lost"
)

// Annotations used by volume binding and provisioning.
const (
	AnnotationSelectedNode      = "volume.kubernetes.io/selected-node"
	AnnotationBoundByController = "pv.kubernetes.io/bound-by-controller"
	AnnotationProvisionedBy     = "pv.kubernetes.io/provisioned-by"
)

// Names through which the volume controller and the agents share the work
// on local volumes: only a node's agent can touch its disk.
const (
	// AnnotationLocalPathRoot is set by the agent on its Node: the
	// directory under which the local-path provisioner puts volumes.
	AnnotationLocalPathRoot = "berth.dev/local-path-root"
	// LocalPathNodePath is the StorageClass parameter that overrides the
	// node's local-path root.
	LocalPathNodePath = "nodePath"
	// LabelReclaimNode marks a released volume whose data the named
	// node's agent must delete or wipe; the agent watches its own.
	LabelReclaimNode = "berth.dev/reclaim-node"
	// FinalizerLocalPath holds a volume being deleted until its node's
	// agent has removed the directory.
	FinalizerLocalPath = "berth.dev/local-path"
	// AnnotationRecycle asks the agent to wipe a released volume; its
	// value is the UID of the claim that released it.
	AnnotationRecycle = "berth.dev/recycle"
	// AnnotationRecycled is the agent's answer: the UID of the claim
	// whose data it wiped.
	AnnotationRecycled = "berth.dev/recycled"
)

// PersistentVolumeClaimStatus is the observed state of a claim.
type PersistentVolumeClaimStatus struct {
	Phase       PersistentVolumeClaimPhase   `json:"phase,omitempty"`
	AccessModes []PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	Capacity    ResourceList                 `json:"capacity,omitempty"`
}

// +kubebuilder:object:root=true

// StorageClass describes a kind of storage and how to provision it.
type StorageClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Provisioner          string                         `json:"provisioner"`
	Parameters           map[string]string              `json:"parameters,omitempty"`
	ReclaimPolicy        *PersistentVolumeReclaimPolicy `json:"reclaimPolicy,omitempty"`
	MountOptions         []string                       `json:"mountOptions,omitempty"`
	AllowVolumeExpansion *bool                          `json:"allowVolumeExpansion,omitempty"`
	VolumeBindingMode    *VolumeBindingMode             `json:"volumeBindingMode,omitempty"`
}

// VolumeBindingMode says when a claim is bound.
type VolumeBindingMode string

// Volume binding modes.
const (
	VolumeBindingImmediate            VolumeBindingMode = "Immediate"
	VolumeBindingWaitForFirstConsumer VolumeBindingMode = "WaitForFirstConsumer"
)

// LocalPathProvisioner is berth's built-in provisioner.
const LocalPathProvisioner = "berth.dev/local-path"

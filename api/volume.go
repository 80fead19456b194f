package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// PersistentVolume is a piece of storage that a claim can bind.
type PersistentVolume struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the volume: where its data lives, how big it is and who
	// may claim it.
	Spec PersistentVolumeSpec `json:"spec,omitempty"`
	// Status is the volume's phase as the volume controller sets it.
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
	// Capacity holds the volume's storage size, which claims are matched
	// against; berth does not limit what is written.
	Capacity               ResourceList `json:"capacity,omitempty"`
	PersistentVolumeSource `json:",inline"`
	// AccessModes are the modes the volume offers; a claim binds only to a
	// volume that offers all of its own. berth does not enforce them on
	// pods.
	AccessModes []PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// ClaimRef is the claim the volume is bound to, or pre-bound to when set
	// in a manifest; the volume controller sets it on binding.
	ClaimRef *ObjectReference `json:"claimRef,omitempty"`
	// PersistentVolumeReclaimPolicy is what happens once its claim is
	// deleted: Retain (the default: Released, data kept), Delete or Recycle.
	// Delete and Recycle work only on directories the local-path provisioner
	// made or under the node's local-path root; elsewhere the volume fails.
	PersistentVolumeReclaimPolicy PersistentVolumeReclaimPolicy `json:"persistentVolumeReclaimPolicy,omitempty"`
	// StorageClassName is the class of the volume: it binds only claims of
	// that class, or with none, claims of no class.
	StorageClassName string `json:"storageClassName,omitempty"`
	// MountOptions are kept and otherwise unused: berth mounts no volumes.
	MountOptions []string `json:"mountOptions,omitempty"`
	// VolumeMode is Filesystem (the default) or Block, matched against the
	// claim's; the agent gives pods a directory either way.
	VolumeMode *PersistentVolumeMode `json:"volumeMode,omitempty"`
	// NodeAffinity names the nodes where the volume can be used; the
	// scheduler places the pods of its claim there. Local volumes need one.
	NodeAffinity *VolumeNodeAffinity `json:"nodeAffinity,omitempty"`
}

// PersistentVolumeSource is where a volume's data lives.
type PersistentVolumeSource struct {
	// HostPath is a directory on whatever node the pod runs on (its node
	// affinity, if any, says which).
	HostPath *HostPathVolumeSource `json:"hostPath,omitempty"`
	// Local is a directory on the one node its node affinity names.
	Local *LocalVolumeSource `json:"local,omitempty"`
}

// LocalVolumeSource is a directory on one node.
type LocalVolumeSource struct {
	// Path is the directory's absolute path on the node.
	Path string `json:"path"`
}

// VolumeNodeAffinity restricts a volume to some nodes.
type VolumeNodeAffinity struct {
	// Required must match a node for the volume to be used there.
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
	// Phase is Pending, Available, Bound, Released (its claim is gone) or
	// Failed (its reclaim policy could not be carried out).
	Phase PersistentVolumePhase `json:"phase,omitempty"`
	// Message says why the volume failed.
	Message string `json:"message,omitempty"`
	// Reason is why the volume failed: VolumeFailedDelete or
	// VolumeFailedRecycle.
	Reason string `json:"reason,omitempty"`
	// LastPhaseTransitionTime is when phase last changed.
	LastPhaseTransitionTime *metav1.Time `json:"lastPhaseTransitionTime,omitempty"`
}

// +kubebuilder:object:root=true

// PersistentVolumeClaim is a request for storage.
type PersistentVolumeClaim struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the storage the claim asks for. Only the storage
	// request may change, and a volume name be set once.
	Spec PersistentVolumeClaimSpec `json:"spec,omitempty"`
	// Status says whether the claim is bound and to what; the volume
	// controller sets it.
	Status PersistentVolumeClaimStatus `json:"status,omitempty"`
}

// VolumeResourceRequirements is a claim's request for capacity.
type VolumeResourceRequirements struct {
	// Limits are accepted (storage only) and ignored.
	Limits ResourceList `json:"limits,omitempty"`
	// Requests hold the storage the claim asks for: it binds to the smallest
	// volume at least that big. Raising it grows a local-path volume whose
	// class allows expansion.
	Requests ResourceList `json:"requests,omitempty"`
}

// PersistentVolumeClaimSpec describes the storage a claim wants.
type PersistentVolumeClaimSpec struct {
	// AccessModes are the modes the claim needs, at least one; a volume must
	// offer them all. berth does not enforce them on pods.
	AccessModes []PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// Selector, when set, limits the claim to volumes with matching labels.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Resources hold the storage request.
	Resources VolumeResourceRequirements `json:"resources,omitempty"`
	// VolumeName is the volume the claim is bound to: set it to bind to that
	// volume, or the volume controller sets it when it binds the claim.
	VolumeName string `json:"volumeName,omitempty"`
	// StorageClassName is the class of volume wanted; unset is the default
	// class, "" no class. With no volume to bind, the class's provisioner
	// makes one.
	StorageClassName *string `json:"storageClassName,omitempty"`
	// VolumeMode is Filesystem (the default) or Block; the volume's must be
	// the same.
	VolumeMode *PersistentVolumeMode `json:"volumeMode,omitempty"`
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

// The storage-object-in-use protection finalizers, Kubernetes' names: a
// claim a pod still uses, and a volume still bound to a claim, wait behind
// them when deleted, so that deleting either cannot pull the data from
// under a running pod.
const (
	// FinalizerPVCProtection holds a claim being deleted until no pod
	// that is not finished uses it.
	FinalizerPVCProtection = "kubernetes.io/pvc-protection"
	// FinalizerPVProtection holds a volume being deleted until it is no
	// longer Bound to a claim.
	FinalizerPVProtection = "kubernetes.io/pv-protection"
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
	// Phase is Pending, Bound, or Lost once its volume is gone or bound to
	// another claim.
	Phase PersistentVolumeClaimPhase `json:"phase,omitempty"`
	// AccessModes are the bound volume's.
	AccessModes []PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// Capacity is the bound volume's storage size.
	Capacity ResourceList `json:"capacity,omitempty"`
}

// +kubebuilder:object:root=true

// StorageClass describes a kind of storage and how to provision it.
type StorageClass struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Provisioner names what makes volumes for claims of the class. berth
	// provisions only for berth.dev/local-path; a claim of another class
	// waits for a volume made elsewhere.
	Provisioner string `json:"provisioner"`
	// Parameters are for the provisioner: berth.dev/local-path reads
	// nodePath, the directory to put volumes under in place of the node's
	// local-path root.
	Parameters map[string]string `json:"parameters,omitempty"`
	// ReclaimPolicy is the reclaim policy of the volumes the class
	// provisions: Delete (the default) or Retain.
	ReclaimPolicy *PersistentVolumeReclaimPolicy `json:"reclaimPolicy,omitempty"`
	// MountOptions are copied to the volumes the class provisions, and
	// otherwise unused: berth mounts no volumes.
	MountOptions []string `json:"mountOptions,omitempty"`
	// AllowVolumeExpansion lets a bound claim grow by raising its storage
	// request; berth can grow only the volumes it provisioned.
	AllowVolumeExpansion *bool `json:"allowVolumeExpansion,omitempty"`
	// VolumeBindingMode is Immediate (the default: a claim is bound or
	// provisioned when made) or WaitForFirstConsumer (when a pod using it is
	// scheduled, on that pod's node).
	VolumeBindingMode *VolumeBindingMode `json:"volumeBindingMode,omitempty"`
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

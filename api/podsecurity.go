package api

import (
	corev1 "k8s.io/api/core/v1"
)

// The security contexts are berth's own structs, since berth's runtimes
// read their fields; the parts no berth code reads (capabilities, the
// SELinux, seccomp and AppArmor profiles, Windows options, sysctls) are
// Kubernetes' own types, as PodSpec explains.

// SecurityContext sets the identity and privileges a container runs with;
// each field set overrides the pod's securityContext.
type SecurityContext struct {
	// RunAsUser is the user ID the process runs as, the agent's own when
	// unset; setting it needs an agent that may change user. The pod's
	// files (its volumes and token) are reachable by the users its
	// containers run as and by no other; the token is that user's, mode
	// 0600, when every container runs as one.
	RunAsUser *int64 `json:"runAsUser,omitempty"`
	// RunAsGroup is the group ID the process runs as, the agent's own when
	// unset; with either set, the process keeps no supplementary groups.
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
	// RunAsNonRoot refuses to start the container as user 0.
	RunAsNonRoot *bool `json:"runAsNonRoot,omitempty"`
	// Capabilities are Linux capabilities added to and dropped from the
	// runtime's default set.
	Capabilities *corev1.Capabilities `json:"capabilities,omitempty"`
	// Privileged runs the container with every capability and device of
	// the node.
	Privileged *bool `json:"privileged,omitempty"`
	// ReadOnlyRootFilesystem mounts the container's root file system read
	// only.
	ReadOnlyRootFilesystem *bool `json:"readOnlyRootFilesystem,omitempty"`
	// AllowPrivilegeEscalation false sets no_new_privs on the process, so
	// that it cannot gain privileges (through setuid files, say).
	AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation,omitempty"`
	// ProcMount is Default (a masked, partly read-only /proc) or Unmasked.
	ProcMount *corev1.ProcMountType `json:"procMount,omitempty"`
	// SeccompProfile is the seccomp filter of the process: RuntimeDefault,
	// Unconfined or a Localhost profile.
	SeccompProfile *corev1.SeccompProfile `json:"seccompProfile,omitempty"`
	// AppArmorProfile is the AppArmor profile of the process.
	AppArmorProfile *corev1.AppArmorProfile `json:"appArmorProfile,omitempty"`
	// SELinuxOptions is the SELinux context of the process.
	SELinuxOptions *corev1.SELinuxOptions `json:"seLinuxOptions,omitempty"`
	// WindowsOptions are for Windows containers, which berth does not run.
	WindowsOptions *corev1.WindowsSecurityContextOptions `json:"windowsOptions,omitempty"`
}

// PodSecurityContext holds the identity and security settings of every
// container of a pod, and the ownership of its volumes.
type PodSecurityContext struct {
	// RunAsUser is the user ID of every container that does not set its
	// own.
	RunAsUser *int64 `json:"runAsUser,omitempty"`
	// RunAsGroup is the group ID of every container that does not set its
	// own.
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
	// RunAsNonRoot refuses to start a container of the pod as user 0,
	// unless the container says otherwise.
	RunAsNonRoot *bool `json:"runAsNonRoot,omitempty"`
	// SupplementalGroups are group IDs every container's first process has
	// besides its primary group.
	// +listType=atomic
	SupplementalGroups []int64 `json:"supplementalGroups,omitempty"`
	// SupplementalGroupsPolicy is Merge (the default: the image's groups
	// for the user too) or Strict.
	SupplementalGroupsPolicy *corev1.SupplementalGroupsPolicy `json:"supplementalGroupsPolicy,omitempty"`
	// FSGroup is a group that owns the pod's volumes and that every
	// container has as a supplementary group.
	FSGroup *int64 `json:"fsGroup,omitempty"`
	// FSGroupChangePolicy is Always (the default: volumes are chowned at
	// every mount) or OnRootMismatch.
	FSGroupChangePolicy *corev1.PodFSGroupChangePolicy `json:"fsGroupChangePolicy,omitempty"`
	// Sysctls are namespaced kernel parameters set for the pod.
	// +listType=atomic
	Sysctls []corev1.Sysctl `json:"sysctls,omitempty"`
	// SeccompProfile is the seccomp filter of every container that does
	// not set its own.
	SeccompProfile *corev1.SeccompProfile `json:"seccompProfile,omitempty"`
	// AppArmorProfile is the AppArmor profile of every container that does
	// not set its own.
	AppArmorProfile *corev1.AppArmorProfile `json:"appArmorProfile,omitempty"`
	// SELinuxOptions is the SELinux context of every container that does
	// not set its own.
	SELinuxOptions *corev1.SELinuxOptions `json:"seLinuxOptions,omitempty"`
	// SELinuxChangePolicy says how the SELinux label of the pod's volumes
	// is applied: Recursive or MountOption.
	SELinuxChangePolicy *corev1.PodSELinuxChangePolicy `json:"seLinuxChangePolicy,omitempty"`
	// WindowsOptions are for Windows containers, which berth does not run.
	WindowsOptions *corev1.WindowsSecurityContextOptions `json:"windowsOptions,omitempty"`
}

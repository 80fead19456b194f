package cri

import "github.com/berth-dev/berth/agent/runtime"

// Features are the pod fields, beyond the common ones, that the CRI
// runtime honours: the termination message, read from the file the
// runtime mounts at terminationMessagePath (or the end of the log); the
// securityContext the kubelet gives a CRI runtime (runAsNonRoot checked
// against the image's user, supplementary groups with fsGroup,
// capabilities, privileged, a read-only root, no_new_privs, the
// RuntimeDefault seccomp filter); hostNetwork, a sandbox in the node's
// network namespace; dnsConfig, added to the sandbox's resolv.conf;
// imagePullSecrets, the credentials of pulls; postStart hooks;
// hostAliases, in the pod's managed /etc/hosts; sysctls, the sandbox's
// (the agent refuses those the kubelet does not allow). A pod that sets another
// runtime.Feature is refused by the agent.
func (r *Runtime) Features() []runtime.Feature {
	return []runtime.Feature{
		runtime.FeatureTermMessage,
		runtime.FeatureRunAsNonRoot, runtime.FeatureFSGroup, runtime.FeatureSupplemental,
		runtime.FeatureCapabilities, runtime.FeaturePrivileged, runtime.FeatureReadOnlyRoot,
		runtime.FeatureNoNewPrivs, runtime.FeatureSeccomp,
		runtime.FeatureHostNetwork, runtime.FeatureDNSConfig, runtime.FeaturePullSecrets,
		runtime.FeaturePostStart, runtime.FeatureHostAliases, runtime.FeatureSysctls,
	}
}

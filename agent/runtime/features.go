package runtime

// Feature names a pod field (or a value of one) that some runtimes honour
// and others do not. The agent refuses, when it arrives, a pod that sets
// one its runtime does not honour, as the kubelet refuses a pod it
// cannot run, rather than run it without.
type Feature string

// Features a runtime may honour; see docs/runtimes.md.
const (
	FeatureHostNetwork    Feature = "spec.hostNetwork"
	FeatureHostPID        Feature = "spec.hostPID"
	FeatureHostIPC        Feature = "spec.hostIPC"
	FeatureShareProcesses Feature = "spec.shareProcessNamespace"
	FeatureDNSConfig      Feature = "spec.dnsConfig"
	FeatureHostAliases    Feature = "spec.hostAliases"
	FeaturePullSecrets    Feature = "spec.imagePullSecrets"
	FeatureSysctls        Feature = "securityContext.sysctls"
	FeatureRunAsNonRoot   Feature = "securityContext.runAsNonRoot"
	FeatureFSGroup        Feature = "securityContext.fsGroup"
	FeatureSupplemental   Feature = "securityContext.supplementalGroups"
	FeatureCapabilities   Feature = "securityContext.capabilities"
	FeaturePrivileged     Feature = "securityContext.privileged"
	FeatureReadOnlyRoot   Feature = "securityContext.readOnlyRootFilesystem"
	FeatureNoNewPrivs     Feature = "securityContext.allowPrivilegeEscalation"
	FeatureSeccomp        Feature = "securityContext.seccompProfile"
	FeatureAppArmor       Feature = "securityContext.appArmorProfile"
	FeatureSELinux        Feature = "securityContext.seLinuxOptions"
	FeatureTermMessage    Feature = "terminationMessagePath"
	FeaturePostStart      Feature = "lifecycle.postStart"
)

// FeatureSet is what a runtime that honours some Features implements; a
// runtime that does not honours none of them.
type FeatureSet interface {
	Features() []Feature
}

// ExecFeatures are what the exec runtime honours by its nature: its
// processes run in the node's network, process and IPC namespaces, so
// asking for them is honoured; it pulls no image, so pull secrets have
// nothing to do.
var ExecFeatures = []Feature{FeatureHostNetwork, FeatureHostPID, FeatureHostIPC, FeatureShareProcesses, FeaturePullSecrets}

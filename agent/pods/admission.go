package pods

import (
	"fmt"
	"slices"
	"strings"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// ReasonUnsupported is the reason of a pod the agent refused because it
// sets a field the node's runtime cannot honour.
const ReasonUnsupported = "UnsupportedPodSpec"

// features is what the agent's runtime honours.
func (m *Manager) features() []runtime.Feature {
	if fs, ok := m.o.Runtime.(runtime.FeatureSet); ok {
		return fs.Features()
	}
	if m.podRuntime() == nil {
		return runtime.ExecFeatures
	}
	return nil
}

// unsupported lists the fields pod sets that the node cannot honour: those
// of has's runtime it lacks, and those no runtime of berth honours yet
// (docs/runtimes.md). Empty, the pod may run.
func unsupported(pod *api.Pod, has []runtime.Feature) []string {
	var out []string
	need := func(f runtime.Feature, set bool, path string) {
		if set && !slices.Contains(has, f) {
			out = append(out, path)
		}
	}
	never := func(set bool, path string) {
		if set {
			out = append(out, path)
		}
	}
	s := &pod.Spec
	need(runtime.FeatureHostNetwork, s.HostNetwork, "spec.hostNetwork")
	need(runtime.FeatureHostPID, s.HostPID, "spec.hostPID")
	need(runtime.FeatureHostIPC, s.HostIPC, "spec.hostIPC")
	need(runtime.FeatureShareProcesses, s.ShareProcessNamespace != nil && *s.ShareProcessNamespace, "spec.shareProcessNamespace")
	need(runtime.FeatureDNSConfig, s.DNSConfig != nil, "spec.dnsConfig")
	need(runtime.FeatureHostAliases, len(s.HostAliases) > 0, "spec.hostAliases")
	need(runtime.FeaturePullSecrets, len(s.ImagePullSecrets) > 0, "spec.imagePullSecrets")
	if sc := s.SecurityContext; sc != nil {
		need(runtime.FeatureSysctls, len(sc.Sysctls) > 0, "spec.securityContext.sysctls")
		need(runtime.FeatureFSGroup, sc.FSGroup != nil, "spec.securityContext.fsGroup")
		need(runtime.FeatureSupplemental, len(sc.SupplementalGroups) > 0, "spec.securityContext.supplementalGroups")
		need(runtime.FeatureSeccomp, sc.SeccompProfile != nil && sc.SeccompProfile.Type == "RuntimeDefault", "spec.securityContext.seccompProfile")
		never(sc.SeccompProfile != nil && sc.SeccompProfile.Type == "Localhost", "spec.securityContext.seccompProfile")
		need(runtime.FeatureAppArmor, sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != "Unconfined", "spec.securityContext.appArmorProfile")
		need(runtime.FeatureSELinux, sc.SELinuxOptions != nil, "spec.securityContext.seLinuxOptions")
		need(runtime.FeatureRunAsNonRoot, sc.RunAsNonRoot != nil && *sc.RunAsNonRoot, "spec.securityContext.runAsNonRoot")
		never(sc.WindowsOptions != nil, "spec.securityContext.windowsOptions")
	}
	never(s.RuntimeClassName != nil, "spec.runtimeClassName")
	never(s.OS != nil && s.OS.Name != "linux", "spec.os")
	never(s.HostUsers != nil && !*s.HostUsers, "spec.hostUsers")
	never(s.SetHostnameAsFQDN != nil && *s.SetHostnameAsFQDN, "spec.setHostnameAsFQDN")
	never(s.HostnameOverride != nil, "spec.hostnameOverride")
	never(len(s.ResourceClaims) > 0, "spec.resourceClaims")
	never(s.Resources != nil, "spec.resources")
	never(len(s.Overhead) > 0, "spec.overhead")
	for _, cs := range []struct {
		name string
		cs   []api.Container
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
		for i := range cs.cs {
			c := &cs.cs[i]
			p := fmt.Sprintf("spec.%s[%d].", cs.name, i)
			if sc := c.SecurityContext; sc != nil {
				need(runtime.FeatureCapabilities, sc.Capabilities != nil && (len(sc.Capabilities.Add) > 0 || len(sc.Capabilities.Drop) > 0), p+"securityContext.capabilities")
				need(runtime.FeaturePrivileged, sc.Privileged != nil && *sc.Privileged, p+"securityContext.privileged")
				need(runtime.FeatureReadOnlyRoot, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, p+"securityContext.readOnlyRootFilesystem")
				need(runtime.FeatureNoNewPrivs, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, p+"securityContext.allowPrivilegeEscalation")
				need(runtime.FeatureSeccomp, sc.SeccompProfile != nil && sc.SeccompProfile.Type == "RuntimeDefault", p+"securityContext.seccompProfile")
				never(sc.SeccompProfile != nil && sc.SeccompProfile.Type == "Localhost", p+"securityContext.seccompProfile")
				need(runtime.FeatureAppArmor, sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != "Unconfined", p+"securityContext.appArmorProfile")
				need(runtime.FeatureSELinux, sc.SELinuxOptions != nil, p+"securityContext.seLinuxOptions")
				need(runtime.FeatureRunAsNonRoot, sc.RunAsNonRoot != nil && *sc.RunAsNonRoot, p+"securityContext.runAsNonRoot")
				never(sc.ProcMount != nil && *sc.ProcMount != "Default", p+"securityContext.procMount")
				never(sc.WindowsOptions != nil, p+"securityContext.windowsOptions")
			}
			need(runtime.FeatureTermMessage, c.TerminationMessagePath != "" && c.TerminationMessagePath != api.DefaultTerminationMessagePath ||
				c.TerminationMessagePolicy == api.TerminationMessageFallbackToLogsOnError, p+"terminationMessagePath")
			if l := c.Lifecycle; l != nil {
				need(runtime.FeaturePostStart, l.PostStart != nil, p+"lifecycle.postStart")
				never(l.StopSignal != nil, p+"lifecycle.stopSignal")
			}
			never(c.RestartPolicy != nil, p+"restartPolicy")
			never(len(c.RestartPolicyRules) > 0, p+"restartPolicyRules")
			never(len(c.VolumeDevices) > 0, p+"volumeDevices")
			never(len(c.Resources.Claims) > 0, p+"resources.claims")
			for j, port := range c.Ports {
				never(port.HostIP != "", fmt.Sprintf("%sports[%d].hostIP", p, j))
			}
			for j, m := range c.VolumeMounts {
				mp := fmt.Sprintf("%svolumeMounts[%d].", p, j)
				never(m.SubPathExpr != "", mp+"subPathExpr")
				never(m.MountPropagation != nil && *m.MountPropagation != "None", mp+"mountPropagation")
				never(m.RecursiveReadOnly != nil && *m.RecursiveReadOnly != "Disabled", mp+"recursiveReadOnly")
				never(len(m.BindMountOptions) > 0, mp+"bindMountOptions")
			}
			for j, e := range c.Env {
				vf := e.ValueFrom
				never(vf != nil && vf.FileKeyRef != nil, fmt.Sprintf("%senv[%d].valueFrom.fileKeyRef", p, j))
			}
		}
	}
	for i := range s.Volumes {
		v := &s.Volumes[i].VolumeSource
		if kind := storedVolumeKind(v); kind != "" {
			out = append(out, fmt.Sprintf("spec.volumes[%d].%s", i, kind))
		}
		if v.Projected != nil {
			for j, src := range v.Projected.Sources {
				p := fmt.Sprintf("spec.volumes[%d].projected.sources[%d]", i, j)
				never(src.ClusterTrustBundle != nil, p+".clusterTrustBundle")
				never(src.PodCertificate != nil, p+".podCertificate")
			}
		}
	}
	return out
}

// storedVolumeKind names the source of a volume that berth stores but no
// agent of berth sets up, or is empty.
func storedVolumeKind(v *api.VolumeSource) string {
	for _, k := range []struct {
		name string
		set  bool
	}{
		{"ephemeral", v.Ephemeral != nil},
		{"csi", v.CSI != nil}, {"nfs", v.NFS != nil}, {"image", v.Image != nil}, {"iscsi", v.ISCSI != nil},
		{"fc", v.FC != nil}, {"gitRepo", v.GitRepo != nil}, {"gcePersistentDisk", v.GCEPersistentDisk != nil},
		{"awsElasticBlockStore", v.AWSElasticBlockStore != nil}, {"glusterfs", v.Glusterfs != nil}, {"rbd", v.RBD != nil},
		{"flexVolume", v.FlexVolume != nil}, {"cinder", v.Cinder != nil}, {"cephfs", v.CephFS != nil},
		{"flocker", v.Flocker != nil}, {"azureFile", v.AzureFile != nil}, {"vsphereVolume", v.VsphereVolume != nil},
		{"quobyte", v.Quobyte != nil}, {"azureDisk", v.AzureDisk != nil}, {"photonPersistentDisk", v.PhotonPersistentDisk != nil},
		{"portworxVolume", v.PortworxVolume != nil}, {"scaleIO", v.ScaleIO != nil}, {"storageos", v.StorageOS != nil},
	} {
		if k.set {
			return k.name
		}
	}
	return ""
}

// refusal is the status and message of a pod refused for fields.
func refusal(node, rt string, fields []string) string {
	return fmt.Sprintf("Pod was rejected: node %s (runtime %s) cannot honour %s (see docs/runtimes.md)", node, rt, strings.Join(fields, ", "))
}

// runtimeName names the agent's runtime in a refusal.
func (m *Manager) runtimeName() string {
	if m.podRuntime() == nil {
		return "exec"
	}
	return "cri"
}

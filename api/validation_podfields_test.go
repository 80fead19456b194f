package api

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidatePodFields(t *testing.T) {
	const c0 = "spec.containers[0]"
	ptr := func(s string) *string { return &s }
	runValidation(t, validPod, []validationCase[*Pod]{
		{"every field Kubernetes takes", func(o *Pod) {
			o.Spec.HostNetwork = true
			o.Spec.DNSPolicy = DNSClusterFirstWithHostNet
			o.Spec.DNSConfig = &PodDNSConfig{Nameservers: []string{"198.18.0.10"}, Searches: []string{"example.org."}, Options: []PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}}}
			o.Spec.ImagePullSecrets = []LocalObjectReference{{Name: "regcred"}}
			o.Spec.PriorityClassName = "high"
			o.Spec.SecurityContext = &PodSecurityContext{FSGroup: new(int64(2000)), Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
			o.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
			o.Spec.Affinity = &Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}}}
			o.Spec.Volumes = []Volume{{Name: "info", VolumeSource: VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}}
			c := &o.Spec.Containers[0]
			c.Ports = []ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: ProtocolTCP}}
			c.Lifecycle = &Lifecycle{PostStart: &LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
			c.SecurityContext = &SecurityContext{AllowPrivilegeEscalation: new(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		}, nil},
		{"resourceFieldRef in env and a volume", func(o *Pod) {
			o.Spec.Containers[0].Env = []EnvVar{
				{Name: "CPU", ValueFrom: &EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}},
				{Name: "HP", ValueFrom: &EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.hugepages-2Mi", Divisor: resource.MustParse("1Mi")}}}}
			o.Spec.Volumes = []Volume{{Name: "r", VolumeSource: VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}}}}}}
		}, nil},
		{"bad resourceFieldRefs", func(o *Pod) {
			o.Spec.Containers[0].Env = []EnvVar{
				{Name: "CPU", ValueFrom: &EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1Mi")}}},
				{Name: "PODS", ValueFrom: &EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.pods"}}}}
			o.Spec.Volumes = []Volume{{Name: "r", VolumeSource: VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("2Mi")}}}}}}}
		}, []string{c0 + `.env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`,
			c0 + `.env[1].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.pods"`,
			"spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName: Required value",
			`spec.volumes[0].downwardAPI.items[0].resourceFieldRef.divisor: Invalid value: "limits.memory": only divisor's values 1, 1k`}},
		{"unknown dnsPolicy", func(o *Pod) { o.Spec.DNSPolicy = "Cluster" }, []string{`spec.dnsPolicy: Unsupported value: "Cluster"`}},
		{"dnsPolicy None without dnsConfig", func(o *Pod) { o.Spec.DNSPolicy = DNSNone },
			[]string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"}},
		{"too many nameservers", func(o *Pod) {
			o.Spec.DNSConfig = &PodDNSConfig{Nameservers: []string{"198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4"}}
		}, []string{"spec.dnsConfig.nameservers: Invalid value: [\"198.18.0.1\",\"198.18.0.2\",\"198.18.0.3\",\"198.18.0.4\"]: must not have more than 3 nameservers"}},
		{"host network port", func(o *Pod) {
			o.Spec.HostNetwork = true
			o.Spec.Containers[0].Ports = []ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: ProtocolTCP}}
		}, []string{c0 + ".ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"}},
		{"privileged without escalation", func(o *Pod) {
			o.Spec.Containers[0].SecurityContext = &SecurityContext{Privileged: new(true), AllowPrivilegeEscalation: new(false)}
		}, []string{c0 + ".securityContext: Invalid value"}},
		{"bad fsGroup", func(o *Pod) { o.Spec.SecurityContext.FSGroup = new(int64(-1)) },
			[]string{"spec.securityContext.fsGroup: Invalid value: -1"}},
		{"bad imagePullPolicy", func(o *Pod) { o.Spec.Containers[0].ImagePullPolicy = "Sometimes" },
			[]string{c0 + `.imagePullPolicy: Unsupported value: "Sometimes"`}},
		{"bad terminationMessagePolicy", func(o *Pod) { o.Spec.Containers[0].TerminationMessagePolicy = "Log" },
			[]string{c0 + `.terminationMessagePolicy: Unsupported value: "Log"`}},
		{"init container restartPolicy", func(o *Pod) {
			o.Spec.InitContainers = []Container{{Name: "i", Image: "busybox", RestartPolicy: new(ContainerRestartPolicyNever)}}
		}, []string{`spec.initContainers[0].restartPolicy: Unsupported value: "Never"`}},
		{"sidecar with a probe", func(o *Pod) {
			o.Spec.InitContainers = []Container{{Name: "i", Image: "busybox", RestartPolicy: new(ContainerRestartPolicyAlways),
				ReadinessProbe: &Probe{ProbeHandler: ProbeHandler{Exec: &ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}}}
		}, nil},
		{"ephemeral containers on create", func(o *Pod) {
			o.Spec.EphemeralContainers = []EphemeralContainer{{Container: Container{Name: "debug", Image: "busybox", Ports: []ContainerPort{{ContainerPort: 80}}}}}
		}, []string{"spec.ephemeralContainers: Forbidden: cannot be set on create",
			"spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container"}},
		{"topology spread", func(o *Pod) {
			o.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "", WhenUnsatisfiable: "Maybe"}}
		}, []string{"spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
			"spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty",
			`spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe"`}},
		{"two volume types", func(o *Pod) {
			o.Spec.Volumes = []Volume{{Name: "v", VolumeSource: VolumeSource{EmptyDir: &EmptyDirVolumeSource{}, NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}}}}
		}, []string{"spec.volumes[0]: Forbidden: may not specify more than 1 volume type"}},
		{"bad priorityClassName", func(o *Pod) { o.Spec.PriorityClassName = "High" },
			[]string{`spec.priorityClassName: Invalid value: "High"`}},
		{"preferred anti-affinity weight", func(o *Pod) {
			o.Spec.Affinity = &Affinity{PodAntiAffinity: &PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 101, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone"}}}}}
		}, []string{"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100"}},
		{"subPath and subPathExpr", func(o *Pod) {
			o.Spec.Volumes = []Volume{{Name: "v", VolumeSource: VolumeSource{EmptyDir: &EmptyDirVolumeSource{}}}}
			o.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "v", MountPath: "/v", SubPath: "a", SubPathExpr: "$(POD)"}}
		}, []string{c0 + ".volumeMounts[0].subPathExpr: Invalid value: \"$(POD)\": subPathExpr and subPath are mutually exclusive"}},
	})
}

// TestDefaultPodFields checks the defaults Kubernetes gives the fields
// berth took in: a pod's and a template's.
func TestDefaultPodFields(t *testing.T) {
	pod := &Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: PodSpec{
		HostNetwork:              true,
		DeprecatedServiceAccount: "builder",
		Containers:               []Container{{Name: "a", Image: "busybox:1.36", Ports: []ContainerPort{{ContainerPort: 80}}}},
		InitContainers:           []Container{{Name: "i", Image: "busybox"}},
		Volumes: []Volume{{Name: "none"}, {Name: "h", VolumeSource: VolumeSource{HostPath: &HostPathVolumeSource{Path: "/x"}}},
			{Name: "p", VolumeSource: VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}}},
	}}
	Default(pod)
	s := pod.Spec
	c, ic := s.Containers[0], s.InitContainers[0]
	for _, check := range []struct {
		what string
		ok   bool
	}{
		{"dnsPolicy ClusterFirst", s.DNSPolicy == DNSClusterFirst},
		{"securityContext {}", s.SecurityContext != nil && reflect.ValueOf(*s.SecurityContext).IsZero()},
		{"enableServiceLinks true", s.EnableServiceLinks != nil && *s.EnableServiceLinks},
		{"serviceAccountName from serviceAccount", s.ServiceAccountName == "builder" && s.DeprecatedServiceAccount == "builder"},
		{"host port of a host-network pod", c.Ports[0].HostPort == 80},
		{"imagePullPolicy IfNotPresent for a tag", c.ImagePullPolicy == PullIfNotPresent},
		{"imagePullPolicy Always without a tag", ic.ImagePullPolicy == PullAlways},
		{"terminationMessagePath", c.TerminationMessagePath == "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy == TerminationMessageReadFile},
		{"a volume without a source is an emptyDir", s.Volumes[0].EmptyDir != nil},
		{"hostPath type unset", s.Volumes[1].HostPath.Type != nil && *s.Volumes[1].HostPath.Type == HostPathUnset},
		{"projected defaultMode", s.Volumes[2].Projected.DefaultMode != nil && *s.Volumes[2].Projected.DefaultMode == 0o644},
		{"token expiration", *s.Volumes[2].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds == 3600},
	} {
		if !check.ok {
			t.Errorf("%s: not so", check.what)
		}
	}

	rs := &ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: ReplicaSetSpec{Template: PodTemplateSpec{Spec: PodSpec{
		Containers: []Container{{Name: "a", Image: "busybox"}},
	}}}}
	Default(rs)
	if ts := rs.Spec.Template.Spec; ts.EnableServiceLinks != nil || ts.DNSPolicy != DNSClusterFirst || ts.SecurityContext == nil {
		t.Errorf("template: enableServiceLinks %v, dnsPolicy %q, securityContext %v; want nil, ClusterFirst, {}", ts.EnableServiceLinks, ts.DNSPolicy, ts.SecurityContext)
	}
}

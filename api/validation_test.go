package api

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validationCase changes a valid object and names the errors that must
// follow, each as "field.path: Error type" (a prefix of the field error's
// rendering).
type validationCase[T Object] struct {
	name   string
	change func(T)
	want   []string
}

// runValidation validates valid() defaulted, which must pass, then each
// case's change of it.
func runValidation[T Object](t *testing.T, valid func() T, cases []validationCase[T]) {
	t.Helper()
	base := valid()
	Default(base)
	if errs := Validate(base); len(errs) > 0 {
		t.Fatalf("the valid object is not: %v", errs)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := base.DeepCopyObject().(T)
			tc.change(obj)
			checkErrors(t, Validate(obj), tc.want)
		})
	}
}

func checkErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Field + ": " + e.ErrorBody()
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = strings.HasPrefix(got[i], want[i])
	}
	if !ok {
		t.Errorf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default"}
}

func validPod() *Pod {
	return &Pod{ObjectMeta: meta("p"), Spec: PodSpec{Containers: []Container{{Name: "a", Image: "busybox"}}}}
}

func TestValidateObjectMeta(t *testing.T) {
	runValidation(t, func() *ConfigMap { return &ConfigMap{ObjectMeta: meta("settings")} }, []validationCase[*ConfigMap]{
		{"missing name", func(o *ConfigMap) { o.Name = "" }, []string{"metadata.name: Required value"}},
		{"name not a subdomain", func(o *ConfigMap) { o.Name = "Web_1" }, []string{`metadata.name: Invalid value: "Web_1"`}},
		{"subdomain with dots", func(o *ConfigMap) { o.Name = "a.b.c" }, nil},
		{"no namespace", func(o *ConfigMap) { o.Namespace = "" }, []string{"metadata.namespace: Required value"}},
		{"bad namespace", func(o *ConfigMap) { o.Namespace = "a.b" }, []string{`metadata.namespace: Invalid value: "a.b"`}},
		{"label value of 64 characters", func(o *ConfigMap) { o.Labels = map[string]string{"app": strings.Repeat("a", 64)} }, []string{"metadata.labels[app]: Invalid value: \"aaaa"}},
		{"label value of 63 characters", func(o *ConfigMap) { o.Labels = map[string]string{"app": strings.Repeat("a", 63)} }, nil},
		{"label value with a bad end", func(o *ConfigMap) { o.Labels = map[string]string{"app": "web-"} }, []string{`metadata.labels[app]: Invalid value: "web-"`}},
		{"label key prefix over 253 characters", func(o *ConfigMap) {
			o.Labels = map[string]string{strings.Repeat("a.", 127) + "b/name": "x"}
		}, []string{"metadata.labels[a.a."}},
		{"label key name over 63 characters", func(o *ConfigMap) { o.Labels = map[string]string{strings.Repeat("n", 64): "x"} }, []string{"metadata.labels[nnn"}},
		{"label key with two slashes", func(o *ConfigMap) { o.Labels = map[string]string{"a/b/c": "x"} }, []string{"metadata.labels[a/b/c]: Invalid value"}},
		{"bad annotation key", func(o *ConfigMap) { o.Annotations = map[string]string{"not a key": "x"} }, []string{"metadata.annotations: Invalid value"}},
	})
	runValidation(t, func() *Namespace { return &Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}} }, []validationCase[*Namespace]{
		{"namespace names are labels", func(o *Namespace) { o.Name = "team.a" }, []string{`metadata.name: Invalid value: "team.a"`}},
		{"cluster-scoped kinds have no namespace", func(o *Namespace) { o.Namespace = "default" }, []string{"metadata.namespace: Forbidden"}},
		{"bad finalizer", func(o *Namespace) { o.Spec.Finalizers = []FinalizerName{"a b"} }, []string{"spec.finalizers[0]: Invalid value"}},
	})
	runValidation(t, func() *Service {
		return &Service{ObjectMeta: meta("web"), Spec: ServiceSpec{Ports: []ServicePort{{Port: 80}}}}
	}, []validationCase[*Service]{
		{"service names are DNS-1035 labels", func(o *Service) { o.Name = "1web" }, []string{`metadata.name: Invalid value: "1web"`}},
		{"no dots either", func(o *Service) { o.Name = "web.shop" }, []string{`metadata.name: Invalid value: "web.shop"`}},
	})
}

func TestValidatePod(t *testing.T) {
	c0 := "spec.containers[0]"
	runValidation(t, validPod, []validationCase[*Pod]{
		{"no containers", func(o *Pod) { o.Spec.Containers = nil }, []string{"spec.containers: Required value"}},
		{"container without a name", func(o *Pod) { o.Spec.Containers[0].Name = "" }, []string{c0 + ".name: Required value"}},
		{"container name not a label", func(o *Pod) { o.Spec.Containers[0].Name = "A_b" }, []string{c0 + `.name: Invalid value: "A_b"`}},
		{"duplicate container names across init and regular", func(o *Pod) {
			o.Spec.InitContainers = []Container{{Name: "a", Command: []string{"true"}}}
		}, []string{c0 + `.name: Duplicate value: "a"`}},
		{"neither image nor command", func(o *Pod) { o.Spec.Containers[0].Image = "" }, []string{c0 + ".image: Required value"}},
		{"command alone", func(o *Pod) { o.Spec.Containers[0].Image, o.Spec.Containers[0].Command = "", []string{"/bin/app"} }, nil},
		{"args alone", func(o *Pod) { o.Spec.Containers[0].Image, o.Spec.Containers[0].Args = "", []string{"/bin/app"} }, nil},
		{"negative quantity", func(o *Pod) {
			o.Spec.Containers[0].Resources.Requests = ResourceList{ResourceMemory: resource.MustParse("-1Mi")}
		}, []string{c0 + `.resources.requests[memory]: Invalid value: "-1Mi": must be greater than or equal to 0`}},
		{"request above limit", func(o *Pod) {
			o.Spec.Containers[0].Resources = ResourceRequirements{
				Requests: ResourceList{ResourceCPU: resource.MustParse("2"), ResourceMemory: resource.MustParse("1Gi")},
				Limits:   ResourceList{ResourceCPU: resource.MustParse("1500m"), ResourceMemory: resource.MustParse("1Gi")},
			}
		}, []string{c0 + `.resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1500m`}},
		{"unsupported resource", func(o *Pod) {
			o.Spec.Containers[0].Resources.Limits = ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		}, []string{c0 + `.resources.limits[nvidia.com/gpu]: Unsupported value`}},
		{"port numbers", func(o *Pod) {
			o.Spec.Containers[0].Ports = []ContainerPort{{ContainerPort: 0, Protocol: ProtocolTCP}, {ContainerPort: 65536, HostPort: -1, Protocol: ProtocolTCP}, {ContainerPort: 65535, HostPort: 1, Protocol: ProtocolTCP}}
		}, []string{
			c0 + ".ports[0].containerPort: Required value",
			c0 + ".ports[1].containerPort: Invalid value: 65536",
			c0 + ".ports[1].hostPort: Invalid value: -1",
		}},
		{"port names are IANA_SVC_NAMEs and unique", func(o *Pod) {
			o.Spec.Containers[0].Ports = []ContainerPort{
				{Name: "http", ContainerPort: 80, Protocol: ProtocolTCP},
				{Name: "http", ContainerPort: 81, Protocol: ProtocolTCP},
				{Name: "a-very-long-port-name", ContainerPort: 82, Protocol: ProtocolTCP},
				{Name: "1234", ContainerPort: 83, Protocol: ProtocolTCP},
			}
		}, []string{
			c0 + `.ports[1].name: Duplicate value: "http"`,
			c0 + `.ports[2].name: Invalid value: "a-very-long-port-name": must be no more than 15 characters`,
			c0 + `.ports[3].name: Invalid value: "1234": must contain at least one letter`,
		}},
		{"protocol", func(o *Pod) {
			o.Spec.Containers[0].Ports = []ContainerPort{{ContainerPort: 80, Protocol: "HTTP"}}
		}, []string{c0 + `.ports[0].protocol: Unsupported value: "HTTP"`}},
		{"restart policy", func(o *Pod) { o.Spec.RestartPolicy = "Sometimes" }, []string{`spec.restartPolicy: Unsupported value: "Sometimes"`}},
		{"restart policy unset", func(o *Pod) { o.Spec.RestartPolicy = "" }, []string{"spec.restartPolicy: Required value"}},
		{"negative grace period", func(o *Pod) { o.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) }, []string{"spec.terminationGracePeriodSeconds: Invalid value: -1"}},
		{"scheduler", func(o *Pod) { o.Spec.SchedulerName = "volcano" }, []string{`spec.schedulerName: Unsupported value: "volcano"`}},
		{"node name", func(o *Pod) { o.Spec.NodeName = "Node_1" }, []string{`spec.nodeName: Invalid value: "Node_1"`}},
		{"node selector", func(o *Pod) { o.Spec.NodeSelector = map[string]string{"disk": "fast ssd"} }, []string{`spec.nodeSelector[disk]: Invalid value: "fast ssd"`}},
		{"hostname and subdomain", func(o *Pod) { o.Spec.Hostname, o.Spec.Subdomain = "a.b", "C" }, []string{"spec.hostname: Invalid value", "spec.subdomain: Invalid value"}},
		{"service account", func(o *Pod) { o.Spec.ServiceAccountName = "Builder" }, []string{"spec.serviceAccountName: Invalid value"}},
		{"run as", func(o *Pod) {
			o.Spec.Containers[0].SecurityContext = &SecurityContext{RunAsUser: ptr(int64(-1)), RunAsGroup: ptr(int64(1 << 32))}
		}, []string{c0 + ".securityContext.runAsGroup: Invalid value", c0 + ".securityContext.runAsUser: Invalid value"}},
		{"preStop without a handler", func(o *Pod) {
			o.Spec.Containers[0].Lifecycle = &Lifecycle{PreStop: &LifecycleHandler{}}
		}, []string{c0 + ".lifecycle.preStop: Required value: must specify a handler type"}},
		{"postStart with two handlers", func(o *Pod) {
			o.Spec.Containers[0].Lifecycle = &Lifecycle{PostStart: &LifecycleHandler{
				Exec: &ExecAction{Command: []string{"true"}}, Sleep: &corev1.SleepAction{Seconds: 1}}}
		}, []string{c0 + ".lifecycle.postStart: Forbidden: may not specify more than 1 handler type"}},
		{"preStop exec without command", func(o *Pod) {
			o.Spec.Containers[0].Lifecycle = &Lifecycle{PreStop: &LifecycleHandler{Exec: &ExecAction{}}}
		}, []string{c0 + ".lifecycle.preStop.exec.command: Required value"}},
		// Kubernetes checks none of the interactive fields against the
		// others: a terminal without stdin, or stdinOnce without stdin, is
		// valid (kubectl run refuses -t without -i itself).
		{"stdin, stdinOnce and tty", func(o *Pod) {
			c := &o.Spec.Containers[0]
			c.Stdin, c.StdinOnce, c.TTY = true, true, true
		}, nil},
		{"tty without stdin", func(o *Pod) { o.Spec.Containers[0].TTY = true }, nil},
		{"stdinOnce without stdin", func(o *Pod) { o.Spec.Containers[0].StdinOnce = true }, nil},
		{"an init container on a terminal", func(o *Pod) {
			o.Spec.InitContainers = []Container{{Name: "setup", Command: []string{"sh"}, Stdin: true, TTY: true}}
		}, nil},
	})
}

// TestDecodeInteractiveContainer: the fields kubectl run -i -t sets on its
// container decode, from YAML and from the JSON kubectl sends.
func TestDecodeInteractiveContainer(t *testing.T) {
	for _, in := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: t}\nspec:\n  containers:\n  - {name: t, image: busybox, stdin: true, stdinOnce: true, tty: true}\n",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"t"},"spec":{"containers":[{"name":"t","image":"busybox","args":["sh"],"resources":{},"stdin":true,"stdinOnce":true,"tty":true}],"restartPolicy":"Never","dnsPolicy":"ClusterFirst"},"status":{}}`,
	} {
		obj, errs := DecodeObject([]byte(in), DecodeOptions{})
		if len(errs) > 0 {
			t.Fatalf("%s: %v", in, errs)
		}
		if c := obj.(*Pod).Spec.Containers[0]; !c.Stdin || !c.StdinOnce || !c.TTY {
			t.Errorf("%s: decoded %+v", in, c)
		}
	}
}

func TestValidateProbes(t *testing.T) {
	c0 := "spec.containers[0]"
	probe := func(h ProbeHandler) *Probe {
		p := &Probe{ProbeHandler: h}
		defaultProbe(p)
		return p
	}
	runValidation(t, validPod, []validationCase[*Pod]{
		{"no handler", func(o *Pod) { o.Spec.Containers[0].LivenessProbe = probe(ProbeHandler{}) }, []string{c0 + ".livenessProbe: Required value: must specify one of exec, httpGet, tcpSocket or grpc"}},
		{"two handlers", func(o *Pod) {
			o.Spec.Containers[0].ReadinessProbe = probe(ProbeHandler{Exec: &ExecAction{Command: []string{"true"}}, TCPSocket: &TCPSocketAction{Port: intstr.FromInt32(80)}})
		}, []string{c0 + ".readinessProbe: Forbidden: may not specify more than one of exec, httpGet, tcpSocket or grpc"}},
		{"exec without command", func(o *Pod) { o.Spec.Containers[0].StartupProbe = probe(ProbeHandler{Exec: &ExecAction{}}) }, []string{c0 + ".startupProbe.exec.command: Required value"}},
		{"httpGet port and scheme", func(o *Pod) {
			o.Spec.Containers[0].LivenessProbe = probe(ProbeHandler{HTTPGet: &HTTPGetAction{Port: intstr.FromString("no_such_name"), Scheme: "FTP", HTTPHeaders: []HTTPHeader{{Name: "bad header"}}}})
		}, []string{
			c0 + `.livenessProbe.httpGet.httpHeaders[0].name: Invalid value: "bad header"`,
			c0 + `.livenessProbe.httpGet.port: Invalid value: "no_such_name"`,
			c0 + `.livenessProbe.httpGet.scheme: Unsupported value: "FTP"`,
		}},
		{"tcpSocket port number", func(o *Pod) {
			o.Spec.Containers[0].LivenessProbe = probe(ProbeHandler{TCPSocket: &TCPSocketAction{Port: intstr.FromInt32(0)}})
		}, []string{c0 + ".livenessProbe.tcpSocket.port: Invalid value: 0"}},
		{"timings", func(o *Pod) {
			p := probe(ProbeHandler{TCPSocket: &TCPSocketAction{Port: intstr.FromInt32(80)}})
			p.InitialDelaySeconds, p.PeriodSeconds, p.SuccessThreshold = -1, 0, 2
			o.Spec.Containers[0].LivenessProbe = p
		}, []string{
			c0 + ".livenessProbe.initialDelaySeconds: Invalid value: -1",
			c0 + ".livenessProbe.periodSeconds: Invalid value: 0",
			c0 + ".livenessProbe.successThreshold: Invalid value: 2: must be 1",
		}},
		{"readiness may need several successes", func(o *Pod) {
			p := probe(ProbeHandler{TCPSocket: &TCPSocketAction{Port: intstr.FromString("http")}})
			p.SuccessThreshold = 3
			o.Spec.Containers[0].ReadinessProbe = p
		}, nil},
		{"no probes on init containers", func(o *Pod) {
			o.Spec.InitContainers = []Container{{Name: "init", Command: []string{"true"}, ReadinessProbe: probe(ProbeHandler{TCPSocket: &TCPSocketAction{Port: intstr.FromInt32(80)}})}}
		}, []string{"spec.initContainers[0].readinessProbe: Forbidden"}},
	})
}

func TestValidateEnv(t *testing.T) {
	env := "spec.containers[0].env"
	set := func(vars ...EnvVar) func(*Pod) {
		return func(o *Pod) { o.Spec.Containers[0].Env = vars }
	}
	fieldRef := func(path string) *EnvVarSource {
		return &EnvVarSource{FieldRef: &ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	runValidation(t, validPod, []validationCase[*Pod]{
		{"names", set(EnvVar{Name: ""}, EnvVar{Name: "1X"}, EnvVar{Name: "A=B"}, EnvVar{Name: "my.var-1"}), []string{
			env + "[0].name: Required value", env + `[1].name: Invalid value: "1X"`, env + `[2].name: Invalid value: "A=B"`,
		}},
		{"value and valueFrom", set(EnvVar{Name: "A", Value: "x", ValueFrom: fieldRef("metadata.name")}), []string{env + "[0].valueFrom: Invalid value"}},
		{"empty valueFrom", set(EnvVar{Name: "A", ValueFrom: &EnvVarSource{}}), []string{env + "[0].valueFrom: Required value"}},
		{"two sources", set(EnvVar{Name: "A", ValueFrom: &EnvVarSource{
			FieldRef:        &ObjectFieldSelector{FieldPath: "metadata.name"},
			ConfigMapKeyRef: &ConfigMapKeySelector{LocalObjectReference: LocalObjectReference{Name: "c"}, Key: "k"},
		}}), []string{env + "[0].valueFrom: Forbidden"}},
		{"every downward API field", set(
			EnvVar{Name: "A", ValueFrom: fieldRef("metadata.name")},
			EnvVar{Name: "B", ValueFrom: fieldRef("metadata.namespace")},
			EnvVar{Name: "C", ValueFrom: fieldRef("metadata.uid")},
			EnvVar{Name: "D", ValueFrom: fieldRef("spec.nodeName")},
			EnvVar{Name: "E", ValueFrom: fieldRef("spec.serviceAccountName")},
			EnvVar{Name: "F", ValueFrom: fieldRef("status.podIP")},
			EnvVar{Name: "G", ValueFrom: fieldRef("status.hostIP")},
		), nil},
		{"fieldRef outside the list", set(EnvVar{Name: "A", ValueFrom: fieldRef("metadata.labels['app']")}), []string{env + `[0].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.labels['app']"`}},
		{"fieldRef version", set(EnvVar{Name: "A", ValueFrom: &EnvVarSource{FieldRef: &ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}}), []string{env + "[0].valueFrom.fieldRef.apiVersion: Unsupported value"}},
		{"key refs", set(
			EnvVar{Name: "A", ValueFrom: &EnvVarSource{ConfigMapKeyRef: &ConfigMapKeySelector{Key: "k"}}},
			EnvVar{Name: "B", ValueFrom: &EnvVarSource{SecretKeyRef: &SecretKeySelector{LocalObjectReference: LocalObjectReference{Name: "s"}, Key: "bad key"}}},
		), []string{env + "[0].valueFrom.configMapKeyRef.name: Required value", env + `[1].valueFrom.secretKeyRef.key: Invalid value: "bad key"`}},
		{"envFrom", func(o *Pod) {
			o.Spec.Containers[0].EnvFrom = []EnvFromSource{
				{},
				{ConfigMapRef: &ConfigMapEnvSource{LocalObjectReference: LocalObjectReference{Name: "c"}}, SecretRef: &SecretEnvSource{LocalObjectReference: LocalObjectReference{Name: "s"}}},
				{Prefix: "1_", SecretRef: &SecretEnvSource{}},
			}
		}, []string{
			"spec.containers[0].envFrom[0]: Required value",
			"spec.containers[0].envFrom[1]: Forbidden",
			`spec.containers[0].envFrom[2].prefix: Invalid value: "1_"`,
			"spec.containers[0].envFrom[2].secretRef.name: Required value",
		}},
	})
}

func TestValidateVolumes(t *testing.T) {
	withVolumes := func(vols ...Volume) func(*Pod) {
		return func(o *Pod) { o.Spec.Volumes = vols }
	}
	empty := VolumeSource{EmptyDir: &EmptyDirVolumeSource{}}
	runValidation(t, func() *Pod {
		p := validPod()
		p.Spec.Volumes = []Volume{{Name: "data", VolumeSource: empty}}
		p.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "data", MountPath: "/data"}}
		return p
	}, []validationCase[*Pod]{
		{"no source", withVolumes(Volume{Name: "data"}), []string{"spec.volumes[0]: Required value"}},
		{"two sources", withVolumes(Volume{Name: "data", VolumeSource: VolumeSource{EmptyDir: &EmptyDirVolumeSource{}, HostPath: &HostPathVolumeSource{Path: "/x"}}}), []string{"spec.volumes[0]: Forbidden"}},
		{"duplicate and bad names", withVolumes(Volume{Name: "data", VolumeSource: empty}, Volume{Name: "data", VolumeSource: empty}, Volume{Name: "Data", VolumeSource: empty}), []string{
			`spec.volumes[1].name: Duplicate value: "data"`, `spec.volumes[2].name: Invalid value: "Data"`,
		}},
		{"mount of a volume that does not exist", func(o *Pod) {
			o.Spec.Containers[0].VolumeMounts = append(o.Spec.Containers[0].VolumeMounts, VolumeMount{Name: "cache", MountPath: "/cache"})
		}, []string{`spec.containers[0].volumeMounts[1].name: Not found: "cache"`}},
		{"mount paths", func(o *Pod) {
			o.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "data", MountPath: "/data"}, {Name: "data"}, {Name: "data", MountPath: "/x", SubPath: "../etc"}}
		}, []string{
			`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique`,
			"spec.containers[0].volumeMounts[2].mountPath: Required value",
			`spec.containers[0].volumeMounts[3].subPath: Invalid value: "../etc": must not contain '..'`,
		}},
		{"emptyDir medium and size", withVolumes(Volume{Name: "data", VolumeSource: VolumeSource{EmptyDir: &EmptyDirVolumeSource{Medium: "Disk", SizeLimit: ptr(resource.MustParse("-1"))}}}), []string{
			`spec.volumes[0].emptyDir.medium: Unsupported value: "Disk"`, "spec.volumes[0].emptyDir.sizeLimit: Invalid value",
		}},
		{"hostPath", withVolumes(Volume{Name: "data", VolumeSource: VolumeSource{HostPath: &HostPathVolumeSource{Type: ptr(HostPathType("Pipe"))}}}), []string{
			"spec.volumes[0].hostPath.path: Required value", `spec.volumes[0].hostPath.type: Unsupported value: "Pipe"`,
		}},
		{"claim", withVolumes(Volume{Name: "data", VolumeSource: VolumeSource{PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{}}}), []string{"spec.volumes[0].persistentVolumeClaim.claimName: Required value"}},
		{"configMap and secret", withVolumes(
			Volume{Name: "data", VolumeSource: VolumeSource{ConfigMap: &ConfigMapVolumeSource{Items: []KeyToPath{{Key: "k", Path: "/abs"}, {Key: "k", Path: "a/../../b", Mode: ptr(int32(0o1000))}}}}},
			Volume{Name: "s", VolumeSource: VolumeSource{Secret: &SecretVolumeSource{SecretName: "s", DefaultMode: ptr(int32(-1))}}},
		), []string{
			"spec.volumes[0].configMap.items[0].path: Invalid value: \"/abs\": must be a relative path",
			"spec.volumes[0].configMap.items[1].mode: Invalid value",
			"spec.volumes[0].configMap.items[1].path: Invalid value",
			"spec.volumes[0].configMap.name: Required value",
			"spec.volumes[1].secret.defaultMode: Invalid value",
		}},
	})
}

func TestValidateScheduling(t *testing.T) {
	aff := "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
	nodeAffinity := func(reqs ...NodeSelectorRequirement) func(*Pod) {
		return func(o *Pod) {
			o.Spec.Affinity = &Affinity{NodeAffinity: &NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &NodeSelector{
				NodeSelectorTerms: []NodeSelectorTerm{{MatchExpressions: reqs}},
			}}}
		}
	}
	tolerate := func(ts ...Toleration) func(*Pod) {
		return func(o *Pod) { o.Spec.Tolerations = ts }
	}
	runValidation(t, validPod, []validationCase[*Pod]{
		{"operators", nodeAffinity(
			NodeSelectorRequirement{Key: "zone", Operator: NodeSelectorOpIn},
			NodeSelectorRequirement{Key: "gpu", Operator: NodeSelectorOpExists, Values: []string{"x"}},
			NodeSelectorRequirement{Key: "cores", Operator: NodeSelectorOpGt, Values: []string{"4", "8"}},
			NodeSelectorRequirement{Key: "cores", Operator: NodeSelectorOpLt, Values: []string{"four"}},
			NodeSelectorRequirement{Key: "zone", Operator: "Near", Values: []string{"a"}},
			NodeSelectorRequirement{Key: "bad key!", Operator: NodeSelectorOpDoesNotExist},
			NodeSelectorRequirement{Key: "cores", Operator: NodeSelectorOpGt, Values: []string{"-2"}},
		), []string{
			aff + ".matchExpressions[0].values: Required value",
			aff + ".matchExpressions[1].values: Forbidden",
			aff + ".matchExpressions[2].values: Required value: must be specified single value",
			aff + `.matchExpressions[3].values[0]: Invalid value: "four": must be an integer`,
			aff + `.matchExpressions[4].operator: Unsupported value: "Near"`,
			aff + `.matchExpressions[5].key: Invalid value: "bad key!"`,
		}},
		{"no terms", func(o *Pod) {
			o.Spec.Affinity = &Affinity{NodeAffinity: &NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &NodeSelector{}}}
		}, []string{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value"}},
		{"match fields", func(o *Pod) {
			o.Spec.Affinity = &Affinity{NodeAffinity: &NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &NodeSelector{
				NodeSelectorTerms: []NodeSelectorTerm{{MatchFields: []NodeSelectorRequirement{
					{Key: "metadata.labels", Operator: NodeSelectorOpIn, Values: []string{"a"}},
					{Key: "metadata.name", Operator: NodeSelectorOpIn, Values: []string{"a", "b"}},
					{Key: "metadata.name", Operator: NodeSelectorOpExists},
				}}},
			}}}
		}, []string{
			aff + `.matchFields[0].key: Unsupported value: "metadata.labels"`,
			aff + ".matchFields[1].values: Required value",
			aff + `.matchFields[2].operator: Unsupported value: "Exists"`,
		}},
		{"preference weight", func(o *Pod) {
			o.Spec.Affinity = &Affinity{NodeAffinity: &NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []PreferredSchedulingTerm{{Weight: 0}, {Weight: 100}}}}
		}, []string{"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0"}},
		{"anti-affinity terms", func(o *Pod) {
			o.Spec.Affinity = &Affinity{PodAntiAffinity: &PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []PodAffinityTerm{
				{TopologyKey: LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
				{TopologyKey: "topology.kubernetes.io/zone!"},
				{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Like"}}}, Namespaces: []string{"A"}},
			}}}
		}, []string{
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey: Invalid value: "topology.kubernetes.io/zone!"`,
			"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[2].labelSelector.matchExpressions[0].operator: Invalid value",
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[2].namespaces[0]: Invalid value: "A"`,
			"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[2].topologyKey: Required value",
		}},
		{"tolerations", tolerate(
			Toleration{Operator: TolerationOpExists},
			Toleration{Key: "k", Operator: TolerationOpExists, Effect: TaintEffectNoExecute, TolerationSeconds: ptr(int64(30))},
			Toleration{Operator: TolerationOpEqual, Value: "x"},
			Toleration{Key: "k", Operator: TolerationOpExists, Value: "x"},
			Toleration{Key: "k", Value: "x", TolerationSeconds: ptr(int64(1)), Effect: TaintEffectNoSchedule},
			Toleration{Key: "k", Operator: "In"},
			Toleration{Key: "k", Effect: "Evict"},
			Toleration{Key: "k", Value: strings.Repeat("v", 64)},
		), []string{
			`spec.tolerations[2].operator: Invalid value: "Equal": operator must be Exists when`,
			`spec.tolerations[3].value: Invalid value: "x": value must be empty`,
			`spec.tolerations[4].effect: Invalid value: "NoSchedule": effect must be 'NoExecute'`,
			`spec.tolerations[5].operator: Unsupported value: "In"`,
			`spec.tolerations[6].effect: Unsupported value: "Evict"`,
			`spec.tolerations[7].value: Invalid value`,
		}},
	})
}

func TestValidateWorkloads(t *testing.T) {
	template := func(labels map[string]string) PodTemplateSpec {
		return PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: PodSpec{Containers: []Container{{Name: "a", Image: "x"}}}}
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	runValidation(t, func() *Deployment {
		return &Deployment{ObjectMeta: meta("web"), Spec: DeploymentSpec{Selector: selector.DeepCopy(), Template: template(map[string]string{"app": "web", "tier": "x"})}}
	}, []validationCase[*Deployment]{
		{"no selector", func(o *Deployment) { o.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"empty selector", func(o *Deployment) { o.Spec.Selector = &metav1.LabelSelector{} }, []string{"spec.selector: Invalid value"}},
		{"selector does not match the template", func(o *Deployment) { o.Spec.Template.Labels = map[string]string{"app": "api"} }, []string{"spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`"}},
		{"selector expressions", func(o *Deployment) {
			o.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}}}
		}, []string{"spec.template.metadata.labels: Invalid value"}},
		{"bad selector", func(o *Deployment) {
			o.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}}
		}, []string{"spec.selector.matchExpressions[0].values: Required value"}},
		{"negative replicas", func(o *Deployment) { o.Spec.Replicas = ptr(int32(-1)) }, []string{"spec.replicas: Invalid value: -1"}},
		{"zero replicas", func(o *Deployment) { o.Spec.Replicas = ptr(int32(0)) }, nil},
		{"surge and unavailable both 0", func(o *Deployment) {
			o.Spec.Strategy.RollingUpdate = &RollingUpdateDeployment{MaxSurge: ptr(intstr.FromInt32(0)), MaxUnavailable: ptr(intstr.FromString("0%"))}
		}, []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0%\": may not be 0 when `maxSurge` is 0"}},
		{"one of them 0", func(o *Deployment) {
			o.Spec.Strategy.RollingUpdate = &RollingUpdateDeployment{MaxSurge: ptr(intstr.FromInt32(1)), MaxUnavailable: ptr(intstr.FromInt32(0))}
		}, nil},
		{"bad counts", func(o *Deployment) {
			o.Spec.Strategy.RollingUpdate = &RollingUpdateDeployment{MaxSurge: ptr(intstr.FromString("lots")), MaxUnavailable: ptr(intstr.FromString("150%"))}
		}, []string{
			`spec.strategy.rollingUpdate.maxSurge: Invalid value: "lots"`,
			`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%`,
		}},
		{"negative count", func(o *Deployment) {
			o.Spec.Strategy.RollingUpdate.MaxSurge = ptr(intstr.FromInt32(-1))
		}, []string{"spec.strategy.rollingUpdate.maxSurge: Invalid value: -1"}},
		{"recreate with a rolling update", func(o *Deployment) { o.Spec.Strategy.Type = RecreateDeploymentStrategyType }, []string{"spec.strategy.rollingUpdate: Forbidden"}},
		{"unknown strategy", func(o *Deployment) { o.Spec.Strategy.Type = "BlueGreen" }, []string{`spec.strategy.type: Unsupported value: "BlueGreen"`}},
		{"template restart policy", func(o *Deployment) { o.Spec.Template.Spec.RestartPolicy = RestartPolicyNever }, []string{`spec.template.spec.restartPolicy: Unsupported value: "Never"`}},
		{"template pod spec is validated", func(o *Deployment) { o.Spec.Template.Spec.Containers = nil }, []string{"spec.template.spec.containers: Required value"}},
		{"progress deadline", func(o *Deployment) { o.Spec.MinReadySeconds = 600 }, []string{"spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"}},
		{"history", func(o *Deployment) { o.Spec.RevisionHistoryLimit = ptr(int32(-1)) }, []string{"spec.revisionHistoryLimit: Invalid value"}},
		{"template labels", func(o *Deployment) { o.Spec.Template.Labels["bad key"] = "x" }, []string{"spec.template.metadata.labels[bad key]: Invalid value"}},
	})
	runValidation(t, func() *ReplicaSet {
		return &ReplicaSet{ObjectMeta: meta("web"), Spec: ReplicaSetSpec{Selector: selector.DeepCopy(), Template: template(map[string]string{"app": "web"})}}
	}, []validationCase[*ReplicaSet]{
		{"no selector", func(o *ReplicaSet) { o.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"mismatch", func(o *ReplicaSet) { o.Spec.Template.Labels = nil }, []string{"spec.template.metadata.labels: Invalid value"}},
		{"negative replicas", func(o *ReplicaSet) { o.Spec.Replicas = ptr(int32(-3)) }, []string{"spec.replicas: Invalid value"}},
		{"min ready", func(o *ReplicaSet) { o.Spec.MinReadySeconds = -1 }, []string{"spec.minReadySeconds: Invalid value"}},
	})
	runValidation(t, func() *ReplicationController {
		tpl := template(map[string]string{"app": "web"})
		return &ReplicationController{ObjectMeta: meta("web"), Spec: ReplicationControllerSpec{Template: &tpl}}
	}, []validationCase[*ReplicationController]{
		{"no selector and no template labels", func(o *ReplicationController) {
			o.Spec.Selector = nil
			o.Spec.Template.Labels = nil
		}, []string{"spec.selector: Required value"}},
		{"mismatch", func(o *ReplicationController) { o.Spec.Selector = map[string]string{"app": "api"} }, []string{"spec.template.metadata.labels: Invalid value"}},
		{"no template", func(o *ReplicationController) { o.Spec.Template = nil }, []string{"spec.template: Required value"}},
		{"bad selector", func(o *ReplicationController) { o.Spec.Selector["x"] = "a b" }, []string{"spec.selector[x]: Invalid value", "spec.template.metadata.labels: Invalid value"}},
	})
}

func TestValidateService(t *testing.T) {
	runValidation(t, func() *Service {
		return &Service{ObjectMeta: meta("web"), Spec: ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []ServicePort{{Name: "http", Port: 80}}}}
	}, []validationCase[*Service]{
		{"type", func(o *Service) { o.Spec.Type = "Magic" }, []string{`spec.type: Unsupported value: "Magic"`}},
		{"load balancer", func(o *Service) { o.Spec.Type = ServiceTypeLoadBalancer }, nil},
		{"source ranges annotation", func(o *Service) {
			o.Spec.Type = ServiceTypeLoadBalancer
			o.Annotations = map[string]string{AnnotationLoadBalancerSourceRanges: "198.18.0.0/24, 198.19.0.0/16"}
		}, nil},
		{"bad source ranges annotation", func(o *Service) {
			o.Spec.Type = ServiceTypeLoadBalancer
			o.Annotations = map[string]string{AnnotationLoadBalancerSourceRanges: "198.18.0.0/24,nowhere"}
		}, []string{`metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Invalid value: "198.18.0.0/24,nowhere": must be a list of IP ranges`}},
		{"source ranges annotation under the field", func(o *Service) {
			o.Spec.Type, o.Spec.LoadBalancerSourceRanges = ServiceTypeLoadBalancer, []string{"198.18.0.0/24"}
			o.Annotations = map[string]string{AnnotationLoadBalancerSourceRanges: "nowhere"}
		}, nil},
		{"node port", func(o *Service) { o.Spec.Type, o.Spec.Ports[0].NodePort = ServiceTypeNodePort, 30080 }, nil},
		{"node port on a ClusterIP", func(o *Service) { o.Spec.Ports[0].NodePort = 30080 }, []string{"spec.ports[0].nodePort: Forbidden"}},
		{"node port number", func(o *Service) { o.Spec.Type, o.Spec.Ports[0].NodePort = ServiceTypeNodePort, 70000 }, []string{"spec.ports[0].nodePort: Invalid value: 70000"}},
		{"headless node port", func(o *Service) { o.Spec.Type, o.Spec.ClusterIP = ServiceTypeNodePort, ClusterIPNone }, []string{"spec.clusterIPs[0]: Invalid value: \"None\""}},
		{"dual stack", func(o *Service) {
			pol := corev1.IPFamilyPolicyRequireDualStack
			o.Spec.ClusterIPs, o.Spec.IPFamilies, o.Spec.IPFamilyPolicy = []string{"10.0.0.1", "fd00::1"}, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, &pol
		}, nil},
		{"two of a family", func(o *Service) {
			pol := corev1.IPFamilyPolicyPreferDualStack
			o.Spec.ClusterIPs, o.Spec.IPFamilyPolicy = []string{"10.0.0.1", "10.0.0.2"}, &pol
		}, []string{"spec.clusterIPs: Invalid value: [\"10.0.0.1\",\"10.0.0.2\"]: may specify no more than one IP for each IP family"}},
		{"single stack with two", func(o *Service) {
			pol := corev1.IPFamilyPolicySingleStack
			o.Spec.ClusterIPs, o.Spec.IPFamilyPolicy = []string{"10.0.0.1", "fd00::1"}, &pol
		}, []string{"spec.clusterIPs: Invalid value: [\"10.0.0.1\",\"fd00::1\"]: 'SingleStack' ipFamilyPolicy"}},
		{"family mismatch", func(o *Service) {
			o.Spec.ClusterIP, o.Spec.IPFamilies = "10.0.0.1", []corev1.IPFamily{corev1.IPv6Protocol}
			o.Spec.ClusterIPs = []string{"10.0.0.1"}
		}, []string{"spec.ipFamilies[0]: Invalid value"}},
		{"affinity", func(o *Service) { o.Spec.SessionAffinity = "Sticky" }, []string{`spec.sessionAffinity: Unsupported value: "Sticky"`}},
		{"affinity timeout", func(o *Service) {
			t := int32(0)
			o.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			o.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &t}}
		}, []string{"spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0"}},
		{"external policy on ClusterIP", func(o *Service) { o.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }, []string{"spec.externalTrafficPolicy: Invalid value"}},
		{"internal policy", func(o *Service) {
			p := corev1.ServiceInternalTrafficPolicy("Nearby")
			o.Spec.InternalTrafficPolicy = &p
		}, []string{`spec.internalTrafficPolicy: Unsupported value: "Nearby"`}},
		{"no ports", func(o *Service) { o.Spec.Ports = nil }, []string{"spec.ports: Required value"}},
		{"headless without ports", func(o *Service) { o.Spec.Ports, o.Spec.ClusterIP = nil, ClusterIPNone }, nil},
		{"cluster IP", func(o *Service) { o.Spec.ClusterIP, o.Spec.ClusterIPs = "10.0.0.1", []string{"10.0.0.1"} }, nil},
		{"cluster IP form", func(o *Service) { o.Spec.ClusterIP, o.Spec.ClusterIPs = "10.0.0.300", []string{"10.0.0.300"} }, []string{
			`spec.clusterIPs[0]: Invalid value: "10.0.0.300"`,
		}},
		{"cluster IPs first", func(o *Service) { o.Spec.ClusterIP, o.Spec.ClusterIPs = "10.0.0.1", []string{"10.0.0.2"} }, []string{
			"spec.clusterIPs: Invalid value: [\"10.0.0.2\"]: first value must match `clusterIP`",
		}},
		{"external name required", func(o *Service) { o.Spec.Type = ServiceTypeExternalName }, []string{"spec.externalName: Required value"}},
		{"external name", func(o *Service) { o.Spec.Type, o.Spec.ExternalName = ServiceTypeExternalName, "db.example.com." }, nil},
		{"bad external name", func(o *Service) {
			o.Spec.Type, o.Spec.ExternalName, o.Spec.ClusterIP = ServiceTypeExternalName, "not a host", ClusterIPNone
		}, []string{`spec.externalName: Invalid value: "not a host"`, "spec.clusterIP: Forbidden"}},
		{"ports unique", func(o *Service) {
			o.Spec.Ports = []ServicePort{
				{Name: "http", Port: 80, Protocol: ProtocolTCP, TargetPort: intstr.FromInt32(80)},
				{Name: "http", Port: 80, Protocol: ProtocolTCP, TargetPort: intstr.FromInt32(81)},
				{Name: "dns", Port: 80, Protocol: ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			}
		}, []string{`spec.ports[1]: Duplicate value: "80/TCP"`, `spec.ports[1].name: Duplicate value: "http"`}},
		{"names required with several ports", func(o *Service) {
			o.Spec.Ports = append(o.Spec.Ports, ServicePort{Port: 443, Protocol: ProtocolTCP, TargetPort: intstr.FromInt32(8443)})
		}, []string{"spec.ports[1].name: Required value"}},
		{"port numbers", func(o *Service) {
			o.Spec.Ports = []ServicePort{{Name: "a", Port: 0, Protocol: ProtocolTCP, TargetPort: intstr.FromString("Bad_Name")}, {Name: "B", Port: 70000, Protocol: "ICMP", TargetPort: intstr.FromInt32(70000)}}
		}, []string{
			"spec.ports[0].port: Invalid value: 0",
			`spec.ports[0].targetPort: Invalid value: "Bad_Name"`,
			`spec.ports[1].name: Invalid value: "B"`,
			"spec.ports[1].port: Invalid value: 70000",
			`spec.ports[1].protocol: Unsupported value: "ICMP"`,
			"spec.ports[1].targetPort: Invalid value: 70000",
		}},
		{"selector", func(o *Service) { o.Spec.Selector = map[string]string{"app": "-x-"} }, []string{"spec.selector[app]: Invalid value"}},
	})
	runValidation(t, func() *Endpoints {
		return &Endpoints{ObjectMeta: meta("web"), Subsets: []EndpointSubset{{Addresses: []EndpointAddress{{IP: "10.0.0.1"}}, Ports: []EndpointPort{{Port: 80}}}}}
	}, []validationCase[*Endpoints]{
		{"bad address", func(o *Endpoints) {
			o.Subsets[0].NotReadyAddresses = []EndpointAddress{{IP: "10.0.0.300", Hostname: "A"}}
		}, []string{
			"subsets[0].notReadyAddresses[0].hostname: Invalid value", "subsets[0].notReadyAddresses[0].ip: Invalid value",
		}},
		{"bad port", func(o *Endpoints) { o.Subsets[0].Ports[0].Port = 0 }, []string{"subsets[0].ports[0].port: Invalid value"}},
	})
	runValidation(t, func() *EndpointSlice {
		return &EndpointSlice{ObjectMeta: meta("web-x7k2p"), AddressType: AddressTypeIPv4,
			Endpoints: []Endpoint{{Addresses: []string{"127.0.0.21"}, Hostname: ptr("web-0"), NodeName: ptr("node-1")}},
			Ports:     []EndpointSlicePort{{Name: ptr("http"), Port: ptr(int32(8080))}, {Port: ptr(int32(53)), Protocol: ptr(ProtocolUDP)}}}
	}, []validationCase[*EndpointSlice]{
		{"address type required", func(o *EndpointSlice) { o.AddressType = "" }, []string{"addressType: Required value"}},
		{"address type", func(o *EndpointSlice) { o.AddressType = "IP" }, []string{`addressType: Unsupported value: "IP"`}},
		{"address of the other family", func(o *EndpointSlice) { o.Endpoints[0].Addresses[0] = "fd00::1" }, []string{`endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address`}},
		{"IPv6", func(o *EndpointSlice) { o.AddressType, o.Endpoints[0].Addresses[0] = AddressTypeIPv6, "fd00::1" }, nil},
		{"FQDN", func(o *EndpointSlice) {
			o.AddressType, o.Endpoints[0].Addresses[0] = AddressTypeFQDN, "web.example.com"
		}, nil},
		{"not an address", func(o *EndpointSlice) { o.Endpoints[0].Addresses[0] = "10.0.0.300" }, []string{"endpoints[0].addresses[0]: Invalid value"}},
		{"no address", func(o *EndpointSlice) { o.Endpoints[0].Addresses = nil }, []string{"endpoints[0].addresses: Required value: must contain at least 1 address"}},
		{"names", func(o *EndpointSlice) { o.Endpoints[0].Hostname, o.Endpoints[0].NodeName = ptr("A"), ptr("_n") }, []string{
			"endpoints[0].hostname: Invalid value", "endpoints[0].nodeName: Invalid value",
		}},
		{"too many endpoints", func(o *EndpointSlice) {
			o.Endpoints = slices.Repeat(o.Endpoints, 1001)
		}, []string{"endpoints: Too many: 1001: must have at most 1000 items"}},
		{"duplicate port name", func(o *EndpointSlice) { o.Ports[1].Name = ptr("http") }, []string{`ports[1].name: Duplicate value: "http"`}},
		{"port", func(o *EndpointSlice) { o.Ports[0].Port = ptr(int32(0)) }, []string{"ports[0].port: Invalid value"}},
		{"all ports", func(o *EndpointSlice) { o.Ports[0].Port = nil }, nil},
		{"protocol", func(o *EndpointSlice) { o.Ports[0].Protocol = ptr(Protocol("ICMP")) }, []string{`ports[0].protocol: Unsupported value: "ICMP"`}},
		{"app protocol", func(o *EndpointSlice) { o.Ports[0].AppProtocol = ptr("not valid") }, []string{"ports[0].appProtocol: Invalid value"}},
		{"name", func(o *EndpointSlice) { o.Name = "Web" }, []string{`metadata.name: Invalid value: "Web"`}},
	})
}

func TestValidateStorage(t *testing.T) {
	runValidation(t, func() *PersistentVolumeClaim {
		return &PersistentVolumeClaim{ObjectMeta: meta("data"), Spec: PersistentVolumeClaimSpec{
			AccessModes: []PersistentVolumeAccessMode{ReadWriteOnce},
			Resources:   VolumeResourceRequirements{Requests: ResourceList{ResourceStorage: resource.MustParse("1Gi")}},
		}}
	}, []validationCase[*PersistentVolumeClaim]{
		{"storage request required", func(o *PersistentVolumeClaim) { o.Spec.Resources.Requests = nil }, []string{"spec.resources.requests[storage]: Required value"}},
		{"zero storage", func(o *PersistentVolumeClaim) { o.Spec.Resources.Requests[ResourceStorage] = resource.MustParse("0") }, []string{"spec.resources.requests[storage]: Invalid value: \"0\": must be greater than zero"}},
		{"negative storage", func(o *PersistentVolumeClaim) {
			o.Spec.Resources.Requests[ResourceStorage] = resource.MustParse("-1Gi")
		}, []string{"spec.resources.requests[storage]: Invalid value"}},
		{"other resources", func(o *PersistentVolumeClaim) { o.Spec.Resources.Requests[ResourceCPU] = resource.MustParse("1") }, []string{"spec.resources.requests[cpu]: Unsupported value"}},
		{"no access modes", func(o *PersistentVolumeClaim) { o.Spec.AccessModes = nil }, []string{"spec.accessModes: Required value"}},
		{"bad access mode", func(o *PersistentVolumeClaim) { o.Spec.AccessModes = []PersistentVolumeAccessMode{"ReadWriteAll"} }, []string{`spec.accessModes[0]: Unsupported value: "ReadWriteAll"`}},
		{"ReadWriteOncePod alone", func(o *PersistentVolumeClaim) {
			o.Spec.AccessModes = []PersistentVolumeAccessMode{ReadWriteOncePod, ReadOnlyMany}
		}, []string{"spec.accessModes: Forbidden"}},
		{"volume mode", func(o *PersistentVolumeClaim) { o.Spec.VolumeMode = ptr(PersistentVolumeMode("Raw")) }, []string{`spec.volumeMode: Unsupported value: "Raw"`}},
		{"class name", func(o *PersistentVolumeClaim) { o.Spec.StorageClassName = ptr("Fast_SSD") }, []string{"spec.storageClassName: Invalid value"}},
		{"no class", func(o *PersistentVolumeClaim) { o.Spec.StorageClassName = ptr("") }, nil},
	})
	runValidation(t, func() *PersistentVolume {
		return &PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: PersistentVolumeSpec{
			Capacity:               ResourceList{ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:            []PersistentVolumeAccessMode{ReadWriteOnce},
			PersistentVolumeSource: PersistentVolumeSource{HostPath: &HostPathVolumeSource{Path: "/srv/pv"}},
		}}
	}, []validationCase[*PersistentVolume]{
		{"capacity", func(o *PersistentVolume) { o.Spec.Capacity = ResourceList{ResourceCPU: resource.MustParse("1")} }, []string{
			"spec.capacity[cpu]: Unsupported value", "spec.capacity[storage]: Required value",
		}},
		{"no source", func(o *PersistentVolume) { o.Spec.HostPath = nil }, []string{"spec: Required value: must specify one of hostPath or local"}},
		{"two sources", func(o *PersistentVolume) { o.Spec.Local = &LocalVolumeSource{Path: "/mnt"} }, []string{"spec: Forbidden", "spec.nodeAffinity: Required value"}},
		{"local needs an absolute path and node affinity", func(o *PersistentVolume) {
			o.Spec.HostPath, o.Spec.Local = nil, &LocalVolumeSource{Path: "mnt"}
			o.Spec.NodeAffinity = &VolumeNodeAffinity{Required: &NodeSelector{}}
		}, []string{"spec.local.path: Invalid value", "spec.nodeAffinity.required.nodeSelectorTerms: Required value"}},
		{"reclaim policy", func(o *PersistentVolume) { o.Spec.PersistentVolumeReclaimPolicy = "Shred" }, []string{`spec.persistentVolumeReclaimPolicy: Unsupported value: "Shred"`}},
		{"namespace", func(o *PersistentVolume) { o.Namespace = "default" }, []string{"metadata.namespace: Forbidden"}},
		{"claim ref", func(o *PersistentVolume) { o.Spec.ClaimRef = &ObjectReference{Namespace: "Shop"} }, []string{"spec.claimRef.name: Required value", "spec.claimRef.namespace: Invalid value"}},
	})
	runValidation(t, func() *StorageClass {
		return &StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: LocalPathProvisioner}
	}, []validationCase[*StorageClass]{
		{"provisioner required", func(o *StorageClass) { o.Provisioner = "" }, []string{"provisioner: Required value"}},
		{"provisioner name", func(o *StorageClass) { o.Provisioner = "my provisioner" }, []string{"provisioner: Invalid value"}},
		{"reclaim policy", func(o *StorageClass) { o.ReclaimPolicy = ptr(PersistentVolumeReclaimRecycle) }, []string{`reclaimPolicy: Unsupported value: "Recycle"`}},
		{"binding mode", func(o *StorageClass) { o.VolumeBindingMode = ptr(VolumeBindingMode("Later")) }, []string{`volumeBindingMode: Unsupported value: "Later"`}},
		{"relative nodePath", func(o *StorageClass) { o.Parameters = map[string]string{LocalPathNodePath: "data/volumes"} }, []string{`parameters[nodePath]: Invalid value: "data/volumes": must be an absolute path`}},
		{"nodePath with ..", func(o *StorageClass) { o.Parameters = map[string]string{LocalPathNodePath: "/srv/../etc"} }, []string{`parameters[nodePath]: Invalid value: "/srv/../etc": must not contain '..'`}},
		{"empty nodePath", func(o *StorageClass) { o.Parameters = map[string]string{LocalPathNodePath: ""} }, nil},
		{"absolute nodePath", func(o *StorageClass) { o.Parameters = map[string]string{LocalPathNodePath: "/srv/volumes/"} }, nil},
		{"another provisioner's nodePath", func(o *StorageClass) {
			o.Provisioner = "example.com/nfs"
			o.Parameters = map[string]string{LocalPathNodePath: "relative"}
		}, nil},
	})
}

func TestValidateConfig(t *testing.T) {
	runValidation(t, func() *ConfigMap { return &ConfigMap{ObjectMeta: meta("c"), Data: map[string]string{"a.conf": "x"}} }, []validationCase[*ConfigMap]{
		{"keys", func(o *ConfigMap) { o.Data["bad/key"] = "x" }, []string{`data[bad/key]: Invalid value: "bad/key"`}},
		{"key in data and binaryData", func(o *ConfigMap) { o.BinaryData = map[string][]byte{"a.conf": nil} }, []string{"binaryData[a.conf]: Invalid value"}},
		{"too big", func(o *ConfigMap) { o.Data["big"] = strings.Repeat("x", 1<<20) }, []string{"data: Too long"}},
	})
	runValidation(t, func() *Secret { return &Secret{ObjectMeta: meta("s"), Data: map[string][]byte{"k": []byte("v")}} }, []validationCase[*Secret]{
		{"keys", func(o *Secret) { o.StringData = map[string]string{"..": "x"} }, []string{"stringData[..]: Invalid value"}},
		{"tls", func(o *Secret) { o.Type = SecretTypeTLS; o.StringData = map[string]string{TLSCertKey: "c"} }, []string{"data[tls.key]: Required value"}},
		{"custom type", func(o *Secret) { o.Type = "example.com/token" }, nil},
	})
	runValidation(t, func() *ResourceQuota {
		return &ResourceQuota{ObjectMeta: meta("q"), Spec: ResourceQuotaSpec{Hard: ResourceList{ResourcePods: resource.MustParse("10"), ResourceRequestsCPU: resource.MustParse("500m")}}}
	}, []validationCase[*ResourceQuota]{
		{"unsupported", func(o *ResourceQuota) { o.Spec.Hard["count/jobs.batch"] = resource.MustParse("1") }, []string{"spec.hard[count/jobs.batch]: Unsupported value"}},
		{"fractional count", func(o *ResourceQuota) { o.Spec.Hard[ResourcePods] = resource.MustParse("1500m") }, []string{"spec.hard[pods]: Invalid value: \"1500m\": must be an integer"}},
		{"negative", func(o *ResourceQuota) { o.Spec.Hard[ResourceLimitsMemory] = resource.MustParse("-1") }, []string{"spec.hard[limits.memory]: Invalid value"}},
	})
	runValidation(t, func() *ServiceAccount { return &ServiceAccount{ObjectMeta: meta("builder")} }, []validationCase[*ServiceAccount]{
		{"secret refs", func(o *ServiceAccount) { o.Secrets = []ObjectReference{{}} }, []string{"secrets[0].name: Required value"}},
	})
	runValidation(t, func() *Event {
		return &Event{ObjectMeta: meta("e"), InvolvedObject: ObjectReference{Kind: "Pod", Name: "p"}}
	}, []validationCase[*Event]{
		{"involved object", func(o *Event) { o.InvolvedObject = ObjectReference{} }, []string{"involvedObject.kind: Required value", "involvedObject.name: Required value"}},
		{"type", func(o *Event) { o.Type = "Info" }, []string{`type: Unsupported value: "Info"`}},
	})
	runValidation(t, func() *Lease {
		return &Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: NamespaceNodeLease}, Spec: LeaseSpec{HolderIdentity: ptr("node-1"), LeaseDurationSeconds: ptr(int32(40))}}
	}, []validationCase[*Lease]{
		{"duration", func(o *Lease) { o.Spec.LeaseDurationSeconds = ptr(int32(0)) }, []string{"spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"}},
		{"transitions", func(o *Lease) { o.Spec.LeaseTransitions = ptr(int32(-1)) }, []string{"spec.leaseTransitions: Invalid value: -1"}},
		{"name", func(o *Lease) { o.Name = "Node_1" }, []string{`metadata.name: Invalid value: "Node_1"`}},
	})
	runValidation(t, func() *Node { return &Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}} }, []validationCase[*Node]{
		{"taints", func(o *Node) {
			o.Spec.Taints = []Taint{{Key: "a", Effect: TaintEffectNoSchedule}, {Key: "a", Effect: TaintEffectNoSchedule}, {Effect: "Never"}, {Key: "b"}}
		}, []string{
			`spec.taints[1]: Duplicate value: "a:NoSchedule"`,
			`spec.taints[2].effect: Unsupported value: "Never"`,
			"spec.taints[2].key: Required value",
			"spec.taints[3].effect: Required value",
		}},
	})
}

func TestValidateSource(t *testing.T) {
	runValidation(t, func() *Source {
		return &Source{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: SourceSpec{Type: SourceTypeGit, URL: "git+https://github.com/example/fleet.git"}}
	}, []validationCase[*Source]{
		{"type required", func(o *Source) { o.Spec.Type = "" }, []string{"spec.type: Required value"}},
		{"api is not a source", func(o *Source) { o.Spec.Type = SourceTypeAPI }, []string{`spec.type: Unsupported value: "api"`}},
		{"url required", func(o *Source) { o.Spec.URL = "" }, []string{"spec.url: Required value"}},
		{"scp-like git URL", func(o *Source) { o.Spec.URL = "git@github.com:example/fleet.git" }, nil},
		{"file git URL", func(o *Source) { o.Spec.URL = "git+file:///srv/git/fleet" }, nil},
		{"git scheme", func(o *Source) { o.Spec.URL = "ftp://example.com/fleet" }, []string{`spec.url: Unsupported value: "ftp"`}},
		{"git without a host", func(o *Source) { o.Spec.URL = "https:///fleet" }, []string{"spec.url: Invalid value"}},
		{"not a URL", func(o *Source) { o.Spec.URL = "fleet" }, []string{"spec.url: Invalid value"}},
		{"path escapes", func(o *Source) { o.Spec.Path = "../other" }, []string{"spec.path: Invalid value"}},
		{"http", func(o *Source) { o.Spec.Type, o.Spec.URL = SourceTypeHTTP, "https://example.com/all.yaml" }, nil},
		{"http scheme", func(o *Source) { o.Spec.Type, o.Spec.URL = SourceTypeHTTP, "git://example.com/all.yaml" }, []string{`spec.url: Unsupported value: "git"`}},
		{"ref and path only for git", func(o *Source) {
			o.Spec.Type, o.Spec.URL, o.Spec.Ref, o.Spec.Path = SourceTypeDir, "/srv/deploy", "main", "x"
		}, []string{"spec.path: Forbidden", "spec.ref: Forbidden"}},
		{"interval", func(o *Source) { o.Spec.Interval = &metav1.Duration{} }, []string{"spec.interval: Invalid value"}},
		{"namespace", func(o *Source) { o.Namespace = "default" }, []string{"metadata.namespace: Forbidden"}},
	})
}

// manifestFile is a test manifest read from testdata.
type manifestFile struct {
	name string
	data []byte
}

// manifestFiles reads testdata/manifests/<set>.
func manifestFiles(t testing.TB, set string) []manifestFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "manifests", set, "*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests in %s: %v", set, err)
	}
	var files []manifestFile
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, manifestFile{name: p, data: data})
	}
	return files
}

// TestValidateGoodManifests decodes, defaults and validates a manifest of
// every kind, and checks that every kind has one.
func TestValidateGoodManifests(t *testing.T) {
	kinds := map[string]bool{}
	for _, f := range manifestFiles(t, "good") {
		objs, errs := DecodeStream(f.name, f.data, DecodeOptions{DropStatus: true})
		for _, d := range objs {
			errs = append(errs, d.DefaultAndValidate()...)
			kinds[KindOf(d.Object).GVK.Kind] = true
		}
		if len(errs) > 0 {
			t.Errorf("%s:\n%v", f.name, errs)
		}
	}
	for _, k := range Kinds() {
		if !kinds[k.GVK.Kind] {
			t.Errorf("no good manifest of kind %s", k.GVK.Kind)
		}
	}
}

func TestValidateUnregistered(t *testing.T) {
	type notAKind struct{ ConfigMap }
	errs := Validate(&notAKind{})
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
		t.Errorf("errors = %v", errs)
	}
}

func TestValidatePodDisruptionBudget(t *testing.T) {
	count := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	runValidation(t, func() *PodDisruptionBudget {
		return &PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: PodDisruptionBudgetSpec{
			MinAvailable: count(intstr.FromInt32(2)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}}
	}, []validationCase[*PodDisruptionBudget]{
		{"both counts", func(o *PodDisruptionBudget) { o.Spec.MaxUnavailable = count(intstr.FromInt32(1)) },
			[]string{"spec: Invalid value: \"2, 1\": minAvailable and maxUnavailable cannot be both set"}},
		{"percentage", func(o *PodDisruptionBudget) { o.Spec.MinAvailable = count(intstr.FromString("50%")) }, nil},
		{"max unavailable alone", func(o *PodDisruptionBudget) {
			o.Spec.MinAvailable, o.Spec.MaxUnavailable = nil, count(intstr.FromString("100%"))
		}, nil},
		{"neither count", func(o *PodDisruptionBudget) { o.Spec.MinAvailable = nil }, nil},
		{"negative", func(o *PodDisruptionBudget) { o.Spec.MinAvailable = count(intstr.FromInt32(-1)) },
			[]string{"spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"}},
		{"over 100%", func(o *PodDisruptionBudget) {
			o.Spec.MinAvailable, o.Spec.MaxUnavailable = nil, count(intstr.FromString("101%"))
		}, []string{`spec.maxUnavailable: Invalid value: "101%": must not be greater than 100%`}},
		{"not a percentage", func(o *PodDisruptionBudget) { o.Spec.MinAvailable = count(intstr.FromString("half")) },
			[]string{`spec.minAvailable: Invalid value: "half"`}},
		{"empty selector selects all", func(o *PodDisruptionBudget) { o.Spec.Selector = &metav1.LabelSelector{} }, nil},
		{"bad selector", func(o *PodDisruptionBudget) {
			o.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}
		}, []string{`spec.selector.matchExpressions[0].operator: Invalid value: "Near"`}},
		{"policy", func(o *PodDisruptionBudget) {
			o.Spec.UnhealthyPodEvictionPolicy = ptr(UnhealthyPodEvictionPolicyType("Sometimes"))
		},
			[]string{`spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes"`}},
		{"always allow", func(o *PodDisruptionBudget) { o.Spec.UnhealthyPodEvictionPolicy = ptr(AlwaysAllow) }, nil},
		{"name", func(o *PodDisruptionBudget) { o.Name = "Web_1" }, []string{`metadata.name: Invalid value: "Web_1"`}},
	})
	old := &PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	bad := old.DeepCopy()
	bad.Status = PodDisruptionBudgetStatus{DisruptionsAllowed: -1, CurrentHealthy: -2, DesiredHealthy: -3, ExpectedPods: -4}
	checkErrors(t, ValidateUpdate(old, bad), []string{
		"status.currentHealthy: Invalid value: -2", "status.desiredHealthy: Invalid value: -3",
		"status.disruptionsAllowed: Invalid value: -1", "status.expectedPods: Invalid value: -4",
	})
}

package main

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// fixtureNow is the instant every printer test renders ages against.
var fixtureNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(fixtureNow.Add(-d)) }

func agoPtr(d time.Duration) *metav1.Time { t := ago(d); return &t }

const day = 24 * time.Hour

func meta(ns, name string, age time.Duration, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:         ns,
		Name:              name,
		UID:               types.UID("uid-" + ns + "-" + name),
		ResourceVersion:   "42",
		CreationTimestamp: ago(age),
		Labels:            labels,
	}
}

func qty(s string) resource.Quantity { return resource.MustParse(s) }

func ptr[T any](v T) *T { return &v }

func controller(kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID("uid-default-" + name), Controller: ptr(true)}}
}

// fixturePods cover the statuses kubectl computes: running, crash loop
// with restarts, unschedulable, completed, initializing, terminating.
func fixturePods() []api.Object {
	webContainer := api.Container{
		Name:    "web",
		Image:   "nginx:1.27",
		Command: []string{"nginx", "-g", "daemon off;"},
		Ports:   []api.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: api.ProtocolTCP}},
		Env: []api.EnvVar{
			{Name: "MODE", Value: "production"},
			{Name: "POD_NAME", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "POD_IP", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			{Name: "DB_PASSWORD", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "db-creds"}, Key: "password"}}},
		},
		EnvFrom: []api.EnvFromSource{{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "web-config"}}}},
		Resources: api.ResourceRequirements{
			Requests: api.ResourceList{api.ResourceCPU: qty("250m"), api.ResourceMemory: qty("128Mi")},
			Limits:   api.ResourceList{api.ResourceMemory: qty("256Mi")},
		},
		VolumeMounts: []api.VolumeMount{
			{Name: "data", MountPath: "/var/www"},
			{Name: "config", MountPath: "/etc/nginx/conf.d", ReadOnly: true},
		},
		LivenessProbe: &api.Probe{
			ProbeHandler:   api.ProbeHandler{HTTPGet: &api.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80), Scheme: api.URISchemeHTTP}},
			TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		},
		ReadinessProbe: &api.Probe{
			ProbeHandler:        api.ProbeHandler{TCPSocket: &api.TCPSocketAction{Port: intstr.FromString("http")}},
			InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3,
		},
	}
	webSpec := func(node string) api.PodSpec {
		return api.PodSpec{
			Containers:         []api.Container{webContainer},
			NodeName:           node,
			ServiceAccountName: "default",
			RestartPolicy:      api.RestartPolicyAlways,
			NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
			Tolerations: []api.Toleration{
				{Key: api.TaintNodeUnreachable, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
			Volumes: []api.Volume{
				{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "config", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "web-config"}}}},
				{Name: "cache", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}},
			},
		}
	}
	ready := []api.PodCondition{
		{Type: api.PodInitialized, Status: api.ConditionTrue},
		{Type: api.PodReady, Status: api.ConditionTrue},
		{Type: api.ContainersReady, Status: api.ConditionTrue},
		{Type: api.PodScheduled, Status: api.ConditionTrue},
	}
	webLabels := map[string]string{"app": "web", "pod-template-hash": "7d4b9c"}

	running := &api.Pod{ObjectMeta: meta("default", "web-7d4b9c-abcde", 3*day+2*time.Hour, webLabels), Spec: webSpec("node-1")}
	running.OwnerReferences = controller("ReplicaSet", "web-7d4b9c")
	running.Status = api.PodStatus{
		Phase: api.PodRunning, Conditions: ready, HostIP: "192.168.1.11", PodIP: "192.168.1.11",
		PodIPs: []api.PodIP{{IP: "192.168.1.11"}}, StartTime: agoPtr(3*day + 2*time.Hour), QOSClass: api.QOSBurstable,
		ContainerStatuses: []api.ContainerStatus{{
			Name: "web", Ready: true, Image: "nginx:1.27", ImageID: "exec://nginx", ContainerID: "exec://4f1c",
			State: api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: ago(3*day + 2*time.Hour)}},
		}},
	}

	crashing := &api.Pod{ObjectMeta: meta("default", "web-7d4b9c-fghij", 25*time.Minute, webLabels), Spec: webSpec("node-2")}
	crashing.OwnerReferences = controller("ReplicaSet", "web-7d4b9c")
	crashing.Status = api.PodStatus{
		Phase: api.PodRunning, HostIP: "192.168.1.12", PodIP: "192.168.1.12", StartTime: agoPtr(25 * time.Minute),
		Conditions: []api.PodCondition{
			{Type: api.PodInitialized, Status: api.ConditionTrue},
			{Type: api.PodReady, Status: api.ConditionFalse},
			{Type: api.ContainersReady, Status: api.ConditionFalse},
			{Type: api.PodScheduled, Status: api.ConditionTrue},
		},
		ContainerStatuses: []api.ContainerStatus{{
			Name: "web", RestartCount: 5, Image: "nginx:1.27", ImageID: "exec://nginx", ContainerID: "exec://9a2e",
			State: api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 2m40s restarting failed container"}},
			LastState: api.ContainerState{Terminated: &api.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", StartedAt: ago(4*time.Minute + 2*time.Second), FinishedAt: ago(4 * time.Minute),
			}},
		}},
	}

	pending := &api.Pod{ObjectMeta: meta("shop", "db-0", 90*time.Second, map[string]string{"app": "db"}),
		Spec: api.PodSpec{Containers: []api.Container{{Name: "postgres", Image: "postgres:17",
			Resources: api.ResourceRequirements{Requests: api.ResourceList{api.ResourceCPU: qty("64")}}}}}}
	pending.Status = api.PodStatus{Phase: api.PodPending, Conditions: []api.PodCondition{{
		Type: api.PodScheduled, Status: api.ConditionFalse, Reason: api.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 Insufficient cpu.",
	}}}

	completed := &api.Pod{ObjectMeta: meta("default", "migrate-x7k2p", 2*time.Hour+15*time.Minute, nil),
		Spec: api.PodSpec{Containers: []api.Container{{Name: "migrate", Image: "migrate:3"}}, NodeName: "node-1", RestartPolicy: api.RestartPolicyNever}}
	completed.Status = api.PodStatus{Phase: api.PodSucceeded, PodIP: "192.168.1.11", ContainerStatuses: []api.ContainerStatus{{
		Name: "migrate", State: api.ContainerState{Terminated: &api.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}},
	}}}

	initializing := &api.Pod{ObjectMeta: meta("default", "cache-0", 40*time.Second, nil),
		Spec: api.PodSpec{
			InitContainers: []api.Container{{Name: "wait-db", Image: "busybox"}, {Name: "seed", Image: "busybox"}},
			Containers:     []api.Container{{Name: "redis", Image: "redis:7"}, {Name: "exporter", Image: "redis-exporter"}},
			NodeName:       "node-1",
		}}
	initializing.Status = api.PodStatus{Phase: api.PodPending, InitContainerStatuses: []api.ContainerStatus{
		{Name: "wait-db", State: api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: ago(30 * time.Second)}}},
		{Name: "seed", State: api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: "PodInitializing"}}},
	}}

	terminating := &api.Pod{ObjectMeta: meta("default", "web-old-zz9", 400*day, nil),
		Spec: api.PodSpec{Containers: []api.Container{{Name: "web", Image: "nginx:1.25"}}, NodeName: "node-2"}}
	terminating.DeletionTimestamp = agoPtr(-20 * time.Second)
	terminating.DeletionGracePeriodSeconds = ptr(int64(30))
	terminating.Status = api.PodStatus{Phase: api.PodRunning, PodIP: "192.168.1.12", ContainerStatuses: []api.ContainerStatus{{
		Name: "web", Ready: true, State: api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: ago(400 * day)}},
	}}}

	return []api.Object{running, crashing, pending, completed, initializing, terminating}
}

func fixtureNodes() []api.Object {
	capacity := api.ResourceList{api.ResourceCPU: qty("4"), api.ResourceMemory: qty("8Gi"), api.ResourcePods: qty("110"), api.ResourceEphemeralStorage: qty("100Gi")}
	info := api.NodeSystemInfo{
		MachineID: "9f8e7d", BootID: "b00t", KernelVersion: "6.8.0-45-generic", OSImage: "Ubuntu 24.04.1 LTS",
		ContainerRuntimeVersion: "exec://berth", KubeletVersion: "berth-dev", OperatingSystem: "linux", Architecture: "amd64",
	}
	n1 := &api.Node{ObjectMeta: meta("", "node-1", 30*day, map[string]string{
		api.LabelHostname: "node-1", api.LabelOS: "linux", "node-role.kubernetes.io/control-plane": "",
	})}
	n1.Status = api.NodeStatus{
		Capacity: capacity, Allocatable: capacity, NodeInfo: info,
		Addresses: []api.NodeAddress{{Type: api.NodeInternalIP, Address: "192.168.1.11"}, {Type: api.NodeHostName, Address: "node-1"}},
		Conditions: []api.NodeCondition{
			{Type: api.NodeMemoryPressure, Status: api.ConditionFalse, LastHeartbeatTime: ago(8 * time.Second), LastTransitionTime: ago(30 * day), Reason: "AgentHasSufficientMemory", Message: "agent has sufficient memory available"},
			{Type: api.NodeDiskPressure, Status: api.ConditionFalse, LastHeartbeatTime: ago(8 * time.Second), LastTransitionTime: ago(30 * day), Reason: "AgentHasNoDiskPressure", Message: "agent has no disk pressure"},
			{Type: api.NodeReady, Status: api.ConditionTrue, LastHeartbeatTime: ago(8 * time.Second), LastTransitionTime: ago(30 * day), Reason: "AgentReady", Message: "agent is posting ready status"},
		},
	}
	n2 := &api.Node{ObjectMeta: meta("", "node-2", 5*day+3*time.Hour, map[string]string{api.LabelHostname: "node-2"})}
	n2.Spec = api.NodeSpec{Unschedulable: true, Taints: []api.Taint{
		{Key: api.TaintNodeUnreachable, Effect: api.TaintEffectNoExecute},
		{Key: api.TaintNodeUnschedulable, Effect: api.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "gpu", Effect: api.TaintEffectPreferNoSchedule},
	}}
	n2.Status = api.NodeStatus{
		Capacity: capacity, Allocatable: capacity, NodeInfo: info,
		Addresses: []api.NodeAddress{{Type: api.NodeInternalIP, Address: "192.168.1.12"}, {Type: api.NodeExternalIP, Address: "203.0.113.7"}},
		Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionUnknown, LastHeartbeatTime: ago(3 * time.Minute),
			LastTransitionTime: ago(2 * time.Minute), Reason: "NodeStatusUnknown", Message: "Agent stopped posting node status."}},
	}
	n3 := &api.Node{ObjectMeta: meta("", "node-3", 12*time.Second, nil)}
	return []api.Object{n1, n2, n3}
}

func fixtureServices() []api.Object {
	web := &api.Service{ObjectMeta: meta("default", "web", 3*day, map[string]string{"app": "web"}), Spec: api.ServiceSpec{
		Type: api.ServiceTypeClusterIP, Selector: map[string]string{"app": "web"},
		Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: api.ProtocolTCP}},
	}}
	dns := &api.Service{ObjectMeta: meta("kube-system", "dns", 30*day, nil), Spec: api.ServiceSpec{
		Type: api.ServiceTypeClusterIP, ClusterIP: api.ClusterIPNone, Selector: map[string]string{"app": "dns"},
		Ports: []api.ServicePort{
			{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(10053), Protocol: api.ProtocolUDP},
			{Name: "dns-tcp", Port: 53, TargetPort: intstr.FromInt32(10053), Protocol: api.ProtocolTCP},
		},
	}}
	ext := &api.Service{ObjectMeta: meta("default", "payments", 7*time.Hour, nil), Spec: api.ServiceSpec{
		Type: api.ServiceTypeExternalName, ExternalName: "payments.example.com",
	}}
	return []api.Object{web, dns, ext}
}

func fixtureEndpoints() []api.Object {
	web := &api.Endpoints{ObjectMeta: meta("default", "web", 3*day, nil), Subsets: []api.EndpointSubset{{
		Addresses: []api.EndpointAddress{
			{IP: "192.168.1.11", TargetRef: &api.ObjectReference{Kind: "Pod", Name: "web-7d4b9c-abcde"}},
			{IP: "192.168.1.13"}, {IP: "192.168.1.14"}, {IP: "192.168.1.15"}, {IP: "192.168.1.16"},
		},
		NotReadyAddresses: []api.EndpointAddress{{IP: "192.168.1.12"}},
		Ports:             []api.EndpointPort{{Name: "http", Port: 8080, Protocol: api.ProtocolTCP}},
	}}}
	empty := &api.Endpoints{ObjectMeta: meta("default", "payments", 7*time.Hour, nil)}
	return []api.Object{web, empty}
}

// fixtureEndpointSlices are web's two families, the IPv4 one with more
// endpoints and ports than a cell lists, and a service's placeholder.
func fixtureEndpointSlices() []api.Object {
	ready := api.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)}
	port := func(name string, n int32) api.EndpointSlicePort {
		return api.EndpointSlicePort{Name: ptr(name), Protocol: ptr(api.ProtocolTCP), Port: ptr(n)}
	}
	v4 := &api.EndpointSlice{ObjectMeta: meta("default", "web-x7k2p", 3*day, map[string]string{api.LabelServiceName: "web"}), AddressType: api.AddressTypeIPv4}
	for _, ip := range []string{"192.168.1.11", "192.168.1.12", "192.168.1.13", "192.168.1.14"} {
		v4.Endpoints = append(v4.Endpoints, api.Endpoint{Addresses: []string{ip}, Conditions: ready})
	}
	v4.Ports = []api.EndpointSlicePort{port("http", 8080), port("metrics", 9100), port("grpc", 9000), port("admin", 9001)}
	v6 := &api.EndpointSlice{ObjectMeta: meta("default", "web-q9m4t", 3*day, map[string]string{api.LabelServiceName: "web"}), AddressType: api.AddressTypeIPv6,
		Endpoints: []api.Endpoint{{Addresses: []string{"fd00::11"}, Conditions: ready}},
		Ports:     []api.EndpointSlicePort{port("http", 8080)}}
	empty := &api.EndpointSlice{ObjectMeta: meta("default", "payments-c5n8w", 7*time.Hour, map[string]string{api.LabelServiceName: "payments"}), AddressType: api.AddressTypeIPv4}
	return []api.Object{v4, v6, empty}
}

func fixtureTemplate(app, image string) api.PodTemplateSpec {
	return api.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: api.PodSpec{Containers: []api.Container{{
			Name: app, Image: image, Ports: []api.ContainerPort{{ContainerPort: 80, Protocol: api.ProtocolTCP}},
		}}},
	}
}

func fixtureDeployments() []api.Object {
	web := &api.Deployment{ObjectMeta: meta("default", "web", 3*day, map[string]string{"app": "web"})}
	web.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2", api.AnnotationSource: "fleet"}
	web.Spec = api.DeploymentSpec{
		Replicas: ptr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: fixtureTemplate("web", "nginx:1.27"),
		Strategy: api.DeploymentStrategy{Type: api.RollingUpdateDeploymentStrategyType, RollingUpdate: &api.RollingUpdateDeployment{
			MaxUnavailable: ptr(intstr.FromString("25%")), MaxSurge: ptr(intstr.FromString("25%")),
		}},
	}
	web.Status = api.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, UnavailableReplicas: 1,
		Conditions: []api.WorkloadCondition{
			{Type: api.DeploymentAvailable, Status: api.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: api.DeploymentProgressing, Status: api.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		}}
	api2 := &api.Deployment{ObjectMeta: meta("shop", "api", 150*time.Second, nil)}
	api2.Spec = api.DeploymentSpec{Replicas: ptr(int32(10)), Selector: &metav1.LabelSelector{
		MatchLabels:      map[string]string{"app": "api"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"backend"}}},
	}, Template: fixtureTemplate("api", "shop/api:v2"), Strategy: api.DeploymentStrategy{Type: api.RecreateDeploymentStrategyType}}
	return []api.Object{web, api2}
}

func fixtureReplicaSets() []api.Object {
	newRS := &api.ReplicaSet{ObjectMeta: meta("default", "web-7d4b9c", 2*day, map[string]string{"app": "web", "pod-template-hash": "7d4b9c"})}
	newRS.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-default-web", Controller: ptr(true)}}
	newRS.Spec = api.ReplicaSetSpec{Replicas: ptr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "7d4b9c"}},
		Template: fixtureTemplate("web", "nginx:1.27")}
	newRS.Spec.Template.Labels["pod-template-hash"] = "7d4b9c"
	newRS.Status = api.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 2}
	oldRS := &api.ReplicaSet{ObjectMeta: meta("default", "web-55f8d1", 3*day, map[string]string{"app": "web", "pod-template-hash": "55f8d1"})}
	oldRS.OwnerReferences = newRS.OwnerReferences
	oldRS.Spec = api.ReplicaSetSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "55f8d1"}},
		Template: fixtureTemplate("web", "nginx:1.25")}
	oldRS.Status = api.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 1}
	return []api.Object{newRS, oldRS}
}

func fixtureReplicationControllers() []api.Object {
	t := fixtureTemplate("legacy", "legacy:1")
	rc := &api.ReplicationController{ObjectMeta: meta("default", "legacy", 60*day, nil), Spec: api.ReplicationControllerSpec{
		Replicas: ptr(int32(2)), Selector: map[string]string{"app": "legacy"}, Template: &t,
	}, Status: api.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1}}
	return []api.Object{rc}
}

func fixtureClaims() []api.Object {
	bound := &api.PersistentVolumeClaim{ObjectMeta: meta("default", "data", 3*day, nil)}
	bound.Finalizers = []string{"kubernetes.io/pvc-protection"}
	bound.Annotations = map[string]string{api.AnnotationSelectedNode: "node-1"}
	bound.Spec = api.PersistentVolumeClaimSpec{AccessModes: []api.PersistentVolumeAccessMode{api.ReadWriteOnce},
		Resources:  api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: qty("1Gi")}},
		VolumeName: "pvc-3f2a9c1e", StorageClassName: ptr("local-path"), VolumeMode: ptr(api.PersistentVolumeFilesystem)}
	bound.Status = api.PersistentVolumeClaimStatus{Phase: api.ClaimBound, AccessModes: []api.PersistentVolumeAccessMode{api.ReadWriteOnce},
		Capacity: api.ResourceList{api.ResourceStorage: qty("1Gi")}}
	pending := &api.PersistentVolumeClaim{ObjectMeta: meta("shop", "scratch", 5*time.Minute, nil)}
	pending.Spec = api.PersistentVolumeClaimSpec{AccessModes: []api.PersistentVolumeAccessMode{api.ReadWriteMany, api.ReadOnlyMany},
		Resources: api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: qty("10Gi")}}}
	pending.Status.Phase = api.ClaimPending
	return []api.Object{bound, pending}
}

func fixtureVolumes() []api.Object {
	bound := &api.PersistentVolume{ObjectMeta: meta("", "pvc-3f2a9c1e", 3*day, nil)}
	bound.Annotations = map[string]string{api.AnnotationProvisionedBy: api.LocalPathProvisioner}
	bound.Finalizers = []string{"kubernetes.io/pv-protection"}
	bound.Spec = api.PersistentVolumeSpec{
		Capacity:                      api.ResourceList{api.ResourceStorage: qty("1Gi")},
		PersistentVolumeSource:        api.PersistentVolumeSource{Local: &api.LocalVolumeSource{Path: "/var/lib/berth-agent/volumes/pvc-3f2a9c1e"}},
		AccessModes:                   []api.PersistentVolumeAccessMode{api.ReadWriteOnce},
		ClaimRef:                      &api.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data"},
		PersistentVolumeReclaimPolicy: api.PersistentVolumeReclaimDelete, StorageClassName: "local-path",
		VolumeMode: ptr(api.PersistentVolumeFilesystem),
		NodeAffinity: &api.VolumeNodeAffinity{Required: &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{
			MatchExpressions: []api.NodeSelectorRequirement{{Key: api.LabelHostname, Operator: api.NodeSelectorOpIn, Values: []string{"node-1"}}},
		}}}},
	}
	bound.Status.Phase = api.VolumeBound
	manual := &api.PersistentVolume{ObjectMeta: meta("", "nfs-share", 200*day, nil)}
	manual.Spec = api.PersistentVolumeSpec{
		Capacity:                      api.ResourceList{api.ResourceStorage: qty("500Gi")},
		PersistentVolumeSource:        api.PersistentVolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/mnt/share"}},
		AccessModes:                   []api.PersistentVolumeAccessMode{api.ReadWriteMany, api.ReadOnlyMany, api.ReadWriteOncePod},
		PersistentVolumeReclaimPolicy: api.PersistentVolumeReclaimRetain,
	}
	manual.Status = api.PersistentVolumeStatus{Phase: api.VolumeReleased, Reason: "ClaimDeleted"}
	return []api.Object{bound, manual}
}

func fixtureStorageClasses() []api.Object {
	local := &api.StorageClass{ObjectMeta: meta("", "local-path", 30*day, nil), Provisioner: api.LocalPathProvisioner,
		ReclaimPolicy: ptr(api.PersistentVolumeReclaimDelete), VolumeBindingMode: ptr(api.VolumeBindingWaitForFirstConsumer)}
	local.Annotations = map[string]string{api.AnnotationDefaultStorageClass: "true"}
	fast := &api.StorageClass{ObjectMeta: meta("", "fast", 2*time.Hour, nil), Provisioner: "example.com/nvme",
		ReclaimPolicy: ptr(api.PersistentVolumeReclaimRetain), AllowVolumeExpansion: ptr(true)}
	return []api.Object{local, fast}
}

func fixtureNamespaces() []api.Object {
	d := &api.Namespace{ObjectMeta: meta("", "default", 30*day, nil), Status: api.NamespaceStatus{Phase: api.NamespaceActive}}
	s := &api.Namespace{ObjectMeta: meta("", "shop", 6*time.Hour, map[string]string{"team": "shop"}), Status: api.NamespaceStatus{Phase: api.NamespaceActive}}
	o := &api.Namespace{ObjectMeta: meta("", "old", 900*day, nil), Status: api.NamespaceStatus{Phase: api.NamespaceTerminating}}
	return []api.Object{d, s, o}
}

func fixtureConfig() (configMaps, secrets, accounts, quotas []api.Object) {
	cm := &api.ConfigMap{ObjectMeta: meta("default", "web-config", 3*day, nil),
		Data: map[string]string{"nginx.conf": "server {\n  listen 80;\n}\n", "MODE": "production"}, BinaryData: map[string][]byte{"logo.png": {0x89, 'P'}}}
	empty := &api.ConfigMap{ObjectMeta: meta("default", "empty", 10*time.Second, nil)}
	secret := &api.Secret{ObjectMeta: meta("default", "db-creds", 3*day, nil), Type: api.SecretTypeOpaque,
		Data: map[string][]byte{"username": []byte("app"), "password": []byte("s3cret")}}
	tls := &api.Secret{ObjectMeta: meta("default", "web-tls", 100*day, nil), Type: "kubernetes.io/tls",
		Data: map[string][]byte{"tls.crt": []byte("crt")}, StringData: map[string]string{"tls.key": "key"}}
	sa := &api.ServiceAccount{ObjectMeta: meta("default", "default", 30*day, nil)}
	builder := &api.ServiceAccount{ObjectMeta: meta("default", "builder", 4*day, nil), Secrets: []api.ObjectReference{{Name: "builder-token"}}}
	quota := &api.ResourceQuota{ObjectMeta: meta("shop", "compute", 6*time.Hour, nil)}
	quota.Spec.Hard = api.ResourceList{api.ResourcePods: qty("10"), api.ResourceRequestsCPU: qty("4"), api.ResourceRequestsMemory: qty("8Gi"),
		api.ResourceLimitsCPU: qty("8"), api.ResourceLimitsMemory: qty("16Gi")}
	quota.Status = api.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: api.ResourceList{api.ResourcePods: qty("3"),
		api.ResourceRequestsCPU: qty("750m"), api.ResourceRequestsMemory: qty("384Mi"), api.ResourceLimitsCPU: qty("0"), api.ResourceLimitsMemory: qty("768Mi")}}
	fresh := &api.ResourceQuota{ObjectMeta: meta("default", "objects", 3*time.Second, nil)}
	fresh.Spec.Hard = api.ResourceList{api.ResourceConfigMaps: qty("20"), api.ResourceSecrets: qty("20")}
	return []api.Object{cm, empty}, []api.Object{secret, tls}, []api.Object{sa, builder}, []api.Object{quota, fresh}
}

// fixtureEvents are about the crashing pod, the deployment and the
// fleet source, and one about an object no fixture describes.
func fixtureEvents() []api.Object {
	ev := func(name, kind, ns, obj, typ, reason, msg, component string, first, last time.Duration, count int32) *api.Event {
		e := &api.Event{ObjectMeta: meta(ns, name, first, nil), Type: typ, Reason: reason, Message: msg,
			InvolvedObject: api.ObjectReference{Kind: kind, Namespace: ns, Name: obj, UID: "uid-" + ns + "-" + obj},
			Source:         api.EventSource{Component: component}, FirstTimestamp: ago(first), LastTimestamp: ago(last), Count: count}
		if kind == "Source" {
			e.InvolvedObject.UID = "uid--" + obj
		}
		return e
	}
	return []api.Object{
		ev("web-7d4b9c-fghij.1", "Pod", "default", "web-7d4b9c-fghij", api.EventTypeNormal, "Scheduled", "Successfully assigned default/web-7d4b9c-fghij to node-2", "default-scheduler", 25*time.Minute, 25*time.Minute, 1),
		ev("web-7d4b9c-fghij.2", "Pod", "default", "web-7d4b9c-fghij", api.EventTypeWarning, "BackOff", "Back-off restarting failed container web in pod web-7d4b9c-fghij_default", "agent", 20*time.Minute, 90*time.Second, 12),
		ev("web-7d4b9c-fghij.3", "Pod", "default", "web-7d4b9c-fghij", api.EventTypeNormal, "Started", "Started container web\n", "agent", 4*time.Minute+2*time.Second, 4*time.Minute+2*time.Second, 1),
		ev("web.1", "Deployment", "default", "web", api.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set web-7d4b9c from 0 to 3", "deployment-controller", 2*day, 2*day, 1),
		ev("fleet.1", "Source", "default", "fleet", api.EventTypeWarning, "DriftCorrected", "reverted deployment.apps/web in default: changed through the API", "source-controller", 10*time.Minute, 10*time.Minute, 1),
		ev("other.1", "Pod", "default", "web-7d4b9c-abcde-not", api.EventTypeNormal, "Pulled", "not about any described object", "agent", time.Hour, time.Hour, 1),
	}
}

func fixtureSources() []api.Object {
	fleet := &api.Source{ObjectMeta: meta("", "fleet", 30*day, nil), Spec: api.SourceSpec{
		Type: api.SourceTypeGit, URL: "git+https://git.example.com/ops/fleet.git", Ref: "main", Path: "clusters/prod",
		Interval: &metav1.Duration{Duration: time.Minute}, Options: map[string]string{"token": "hunter2", "knownHosts": "x"},
	}}
	fleet.Status = api.SourceStatus{
		LastAppliedRevision: "3f2a9c1e0b7d4a5f8e6c2b1a0d9f8e7c6b5a4d3e", LastAttemptedRevision: "3f2a9c1e0b7d4a5f8e6c2b1a0d9f8e7c6b5a4d3e",
		LastAppliedCommit: &api.SourceCommit{Message: "web: three replicas", Author: "Ada Lovelace <ada@example.com>", Time: ago(3 * time.Minute)},
		LastSyncTime:      agoPtr(40 * time.Second), LastSyncDuration: &metav1.Duration{Duration: 84 * time.Millisecond}, Objects: 24,
		Conditions: []metav1.Condition{{Type: api.SourceReady, Status: metav1.ConditionTrue, Reason: api.ReasonSucceeded,
			Message: "applied revision 3f2a9c1e0b7d4a5f8e6c2b1a0d9f8e7c6b5a4d3e", LastTransitionTime: ago(2 * time.Hour)}},
	}
	local := &api.Source{ObjectMeta: meta("", "local", 2*day, nil), Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: "/srv/manifests"}}
	local.Status = api.SourceStatus{
		LastAppliedRevision:   "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		LastAttemptedRevision: "sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
		LastSyncTime:          agoPtr(15 * time.Second), Objects: 3,
		Conditions: []metav1.Condition{{Type: api.SourceReady, Status: metav1.ConditionFalse, Reason: api.ReasonInvalidRevision,
			Message: "revision sha256:60303ae22b99 rejected, 2 errors:\n" +
				"/srv/manifests/web.yaml:doc 1 (line 18): spec.template.spec.containers[0].imagee: unknown field \"imagee\"\n" +
				"/srv/manifests/web.yaml:doc 2 (line 9): spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
			LastTransitionTime: ago(15 * time.Second)}},
	}
	fresh := &api.Source{ObjectMeta: meta("", "site", 5*time.Second, nil), Spec: api.SourceSpec{Type: api.SourceTypeHTTP, URL: "https://example.com/site.yaml"}}
	return []api.Object{fleet, local, fresh}
}

// fixtureAlerts are a commit status Alert that delivers, and a chat
// Alert of failures whose receiver is down.
func fixtureAlerts() []api.Object {
	commits := &api.Alert{ObjectMeta: meta("", "commits", 3*day, nil), Spec: api.AlertSpec{
		Provider: api.AlertProvider{Type: api.AlertGitHub, SecretRef: &api.SourceSecretRef{Name: "github-token"}},
		Sources:  []string{"fleet"}, Events: []string{api.AlertEventApplied, api.AlertEventFailed, api.AlertEventHealthy},
	}}
	commits.Status = api.AlertStatus{Sent: 12, LastSentTime: agoPtr(40 * time.Second)}
	chat := &api.Alert{ObjectMeta: meta("", "chat", day, nil), Spec: api.AlertSpec{
		Provider: api.AlertProvider{Type: api.AlertSlack, SecretRef: &api.SourceSecretRef{Name: "slack-url"}},
		Sources:  []string{"*"}, Severity: api.AlertSeverityError,
		SourceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}},
	}}
	chat.Status = api.AlertStatus{Sent: 1, Failed: 2, LastSentTime: agoPtr(5 * time.Hour), LastErrorTime: agoPtr(time.Minute),
		LastError: "slack provider: POST https://hooks.example.com/…: 503 Service Unavailable: "}
	return []api.Object{commits, chat}
}

// fixtureLeases are two nodes' heartbeats and a lease nobody holds.
func fixtureLeases() []api.Object {
	lease := func(name string, holder *string) *api.Lease {
		l := &api.Lease{ObjectMeta: meta(api.NamespaceNodeLease, name, 2*day, nil)}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = holder, ptr(int32(40))
		if holder != nil {
			renewed := metav1.NewMicroTime(ago(3 * time.Second).Time)
			l.Spec.RenewTime = &renewed
		}
		return l
	}
	return []api.Object{lease("node-1", ptr("node-1")), lease("node-2", ptr("node-2")), lease("orphan", nil)}
}

// fixtureBudgets are a budget by count that allows one disruption, one
// by percentage that allows none, and a new one the controller has not
// counted yet.
func fixtureBudgets() []api.Object {
	two, half := intstr.FromInt32(2), intstr.FromString("50%")
	web := &api.PodDisruptionBudget{ObjectMeta: meta("default", "web", 3*time.Hour, nil)}
	web.Spec = api.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	web.Status = api.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3}
	db := &api.PodDisruptionBudget{ObjectMeta: meta("default", "db", 2*day, nil)}
	db.Spec = api.PodDisruptionBudgetSpec{MaxUnavailable: &half, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}
	db.Status = api.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 2}
	fresh := &api.PodDisruptionBudget{ObjectMeta: meta("default", "fresh", 5*time.Second, nil)}
	return []api.Object{db, fresh, web}
}

// fixtureKinds are every kind's fixtures, keyed by resource, for the table
// tests.
func fixtureKinds() map[string][]api.Object {
	cms, secrets, sas, quotas := fixtureConfig()
	roles, clusterRoles, bindings, clusterBindings := fixtureRBAC()
	validatingHooks, mutatingHooks := fixtureWebhooks()
	policies, policyBindings := fixturePolicies()
	return map[string][]api.Object{
		"validatingadmissionpolicies":       policies,
		"validatingadmissionpolicybindings": policyBindings,
		"validatingwebhookconfigurations":   validatingHooks,
		"mutatingwebhookconfigurations":     mutatingHooks,
		"roles":                             roles,
		"clusterroles":                      clusterRoles,
		"rolebindings":                      bindings,
		"clusterrolebindings":               clusterBindings,
		"pods":                              fixturePods(),
		"nodes":                             fixtureNodes(),
		"services":                          fixtureServices(),
		"endpoints":                         fixtureEndpoints(),
		"endpointslices":                    fixtureEndpointSlices(),
		"deployments":                       fixtureDeployments(),
		"replicasets":                       fixtureReplicaSets(),
		"replicationcontrollers":            fixtureReplicationControllers(),
		"persistentvolumeclaims":            fixtureClaims(),
		"persistentvolumes":                 fixtureVolumes(),
		"storageclasses":                    fixtureStorageClasses(),
		"namespaces":                        fixtureNamespaces(),
		"configmaps":                        cms,
		"secrets":                           secrets,
		"serviceaccounts":                   sas,
		"resourcequotas":                    quotas,
		"events":                            fixtureEvents(),
		"sources":                           fixtureSources(),
		"alerts":                            fixtureAlerts(),
		"leases":                            fixtureLeases(),
		"poddisruptionbudgets":              fixtureBudgets(),
		"jobs":                              fixtureJobs(),
		"cronjobs":                          fixtureCronJobs(),
		"statefulsets":                      fixtureStatefulSets(),
		"daemonsets":                        fixtureDaemonSets(),
		"controllerrevisions":               fixtureControllerRevisions(),
		"limitranges":                       fixtureLimitRanges(),
		"horizontalpodautoscalers":          fixtureHPAs(),
		"priorityclasses":                   fixturePriorityClasses(),
		"networkpolicies":                   fixtureNetworkPolicies(),
		"ingresses":                         fixtureIngresses(),
		"ingressclasses":                    fixtureIngressClasses(),
		"customresourcedefinitions":         fixtureCRDs(),
	}
}

package api

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true

// Pod is one or more containers that run together on one node.
type Pod struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired pod: its containers, its volumes and the nodes it
	// may run on. Once the pod exists only container images and added
	// tolerations may change.
	Spec PodSpec `json:"spec,omitempty"`
	// Status is what the scheduler and the node's agent last reported about
	// the pod. Only the status subresource writes it; a manifest's status is
	// ignored.
	Status PodStatus `json:"status,omitempty"`
}

// PodSpec is the subset of Kubernetes' pod spec that berth runs.
type PodSpec struct {
	// Lists keyed by name are merged element by element by server-side
	// apply, as Kubernetes merges them.

	// InitContainers run one at a time, in order, each to a successful exit,
	// before any of the containers starts. A failed one is run again unless
	// restartPolicy is Never, when the pod fails. They may have no probes.
	// +listType=map
	// +listMapKey=name
	InitContainers []Container `json:"initContainers,omitempty"`
	// Containers are the pod's processes, started together once the init
	// containers are done; at least one. Names are unique across containers
	// and init containers.
	// +listType=map
	// +listMapKey=name
	Containers []Container `json:"containers"`
	// Volumes are the pod's volumes. The agent sets each one up on the node
	// and names its host path to every container in BERTH_VOLUME_<NAME> (the
	// name upper-cased, "-" as "_").
	// +listType=map
	// +listMapKey=name
	Volumes []Volume `json:"volumes,omitempty"`
	// RestartPolicy says when the agent restarts a container that exited:
	// Always (the default), OnFailure or Never, after a back-off of 10s
	// doubling to 5m. The pods of a workload must use Always.
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`
	// TerminationGracePeriodSeconds is the time a stopping container has to
	// exit, its preStop hook first and then SIGTERM, before SIGKILL; 30 by
	// default. A deletion's own grace period overrides it.
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// NodeName is the node the pod runs on. The scheduler sets it when it
	// binds the pod; a pod created with it set skips the scheduler and goes
	// to that node's agent.
	NodeName string `json:"nodeName,omitempty"`
	// NodeSelector lists labels a node must have, every one with the same
	// value, for the scheduler to place the pod there.
	// +mapType=atomic
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Affinity holds the pod's node affinity and required pod anti-affinity,
	// which the scheduler honours.
	Affinity *Affinity `json:"affinity,omitempty"`
	// Tolerations let the pod onto nodes with matching taints and say how
	// long it stays on a node that becomes not ready or unreachable. An
	// update may add tolerations but not change or remove one.
	Tolerations []Toleration `json:"tolerations,omitempty"`
	// ServiceAccountName is the service account the pod runs as, "default"
	// when empty. The agent writes a token of it, bound to the pod, to the
	// file named by BERTH_SERVICEACCOUNT_TOKEN_FILE in each container, and
	// beside it, as the kubelet's projected volume holds them, the pod's
	// namespace and ca.crt, the CA the agent trusts for the API server.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// AutomountServiceAccountToken false gives the pod's containers no
	// token of its service account (no BERTH_SERVICEACCOUNT_TOKEN_FILE);
	// unset, the service account's own automountServiceAccountToken
	// decides, and a pod gets a token unless one of them says false.
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
	// Hostname is the pod's DNS name under each service that selects it,
	// <hostname>.<service>.<namespace>.svc.<zone>; the pod's name when
	// empty. The exec runtime does not set the process's host name.
	Hostname string `json:"hostname,omitempty"`
	// Subdomain is checked as a DNS label and otherwise ignored: berth
	// publishes every endpoint of a service under its hostname, whatever the
	// pod's subdomain.
	Subdomain string `json:"subdomain,omitempty"`

	// DNSPolicy says where the pod's resolv.conf points: ClusterFirst (the
	// default) at the cluster DNS, ClusterFirstWithHostNet the same for a
	// pod on the host's network, Default at the node's own resolvers, None
	// at dnsConfig alone. The exec runtime gives the process the node's
	// resolv.conf whatever it says.
	DNSPolicy DNSPolicy `json:"dnsPolicy,omitempty"`
	// DNSConfig adds name servers, search domains and options to what
	// dnsPolicy gives the pod; with dnsPolicy None it is all the pod gets.
	DNSConfig *PodDNSConfig `json:"dnsConfig,omitempty"`
	// EnableServiceLinks, true by default as in Kubernetes, is otherwise
	// ignored: berth puts no variables of the namespace's services in the
	// environment. Whatever it says, every container of a node joined to a
	// server is told where the API server is, as the kubelet tells it:
	// KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT and the other
	// KUBERNETES_* variables of the kubernetes service name the host and
	// port of the agent's --server URL.
	EnableServiceLinks *bool `json:"enableServiceLinks,omitempty"`
	// SchedulerName may only be "default-scheduler", the default.
	SchedulerName string `json:"schedulerName,omitempty"`

	// EphemeralContainers are debugging containers added to a running pod
	// through its ephemeralcontainers subresource; they are never
	// restarted and have no ports, probes or resources.
	// +listType=map
	// +listMapKey=name
	EphemeralContainers []EphemeralContainer `json:"ephemeralContainers,omitempty"`
	// ActiveDeadlineSeconds bounds how long the pod may run, counted from
	// its start, before the agent stops it and fails it with reason
	// DeadlineExceeded.
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// DeprecatedServiceAccount is the old name of serviceAccountName; when
	// only one of the two is set, the other is made the same.
	DeprecatedServiceAccount string `json:"serviceAccount,omitempty"`
	// HostNetwork runs the pod in the node's network namespace: it gets the
	// node's IP and its ports are the node's. Under the exec runtime every
	// pod does.
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// HostPID runs the pod in the node's process namespace.
	HostPID bool `json:"hostPID,omitempty"`
	// HostIPC runs the pod in the node's IPC namespace.
	HostIPC bool `json:"hostIPC,omitempty"`
	// ShareProcessNamespace puts the pod's containers in one process
	// namespace, so that they see and signal one another's processes.
	ShareProcessNamespace *bool `json:"shareProcessNamespace,omitempty"`
	// SecurityContext holds the identity and security settings of every
	// container of the pod; a container's own securityContext overrides
	// them field by field.
	SecurityContext *PodSecurityContext `json:"securityContext,omitempty"`
	// ImagePullSecrets name Secrets of type kubernetes.io/dockerconfigjson
	// (or dockercfg) in the pod's namespace whose credentials are used to
	// pull the pod's images.
	// +listType=map
	// +listMapKey=name
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// PriorityClassName names the PriorityClass whose value becomes the
	// pod's priority at admission; the global default class's when empty.
	// system-node-critical and system-cluster-critical always exist.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Priority is set at admission from priorityClassName; a pod created
	// with a priority must have the one its class gives.
	Priority *int32 `json:"priority,omitempty"`
	// PreemptionPolicy is PreemptLowerPriority (the default) or Never, set
	// at admission from the pod's PriorityClass.
	PreemptionPolicy *PreemptionPolicy `json:"preemptionPolicy,omitempty"`
	// Resources are the pod-level requests and limits of cpu and memory,
	// shared by its containers.
	Resources *ResourceRequirements `json:"resources,omitempty"`
	// Overhead is what running the pod costs beyond its containers, set at
	// admission from its RuntimeClass.
	Overhead ResourceList `json:"overhead,omitempty"`

	// The fields below are held as Kubernetes' own types
	// (k8s.io/api/core/v1): berth stores them and serves them back as they
	// came, validates what Kubernetes validates of them where berth does,
	// and interprets none of them. A node whose runtime cannot honour one
	// that a pod sets refuses the pod at admission (docs/runtimes.md).

	// HostAliases are entries added to the pod's /etc/hosts.
	// +listType=map
	// +listMapKey=ip
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`
	// ReadinessGates are pod conditions that must be True, besides its
	// containers being ready, for the pod to be Ready.
	// +listType=atomic
	ReadinessGates []corev1.PodReadinessGate `json:"readinessGates,omitempty"`
	// RuntimeClassName names the RuntimeClass the pod runs with.
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`
	// TopologySpreadConstraints say how the pod's replicas spread across
	// topology domains: DoNotSchedule ones keep the pod off nodes that
	// would skew its domains beyond maxSkew, ScheduleAnyway ones rank the
	// nodes, as kube-scheduler's PodTopologySpread does.
	// +listType=map
	// +listMapKey=topologyKey
	// +listMapKey=whenUnsatisfiable
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// SetHostnameAsFQDN makes the pod's host name its fully qualified name.
	SetHostnameAsFQDN *bool `json:"setHostnameAsFQDN,omitempty"`
	// OS is the operating system the pod's containers need.
	OS *corev1.PodOS `json:"os,omitempty"`
	// HostUsers false runs the pod in a user namespace of its own.
	HostUsers *bool `json:"hostUsers,omitempty"`
	// SchedulingGates hold the pod back from scheduling while any remains.
	// +listType=map
	// +listMapKey=name
	SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates,omitempty"`
	// ResourceClaims are the dynamic resources the pod claims.
	// +listType=map
	// +listMapKey=name
	ResourceClaims []corev1.PodResourceClaim `json:"resourceClaims,omitempty"`
	// HostnameOverride sets the pod's host name outright.
	HostnameOverride *string `json:"hostnameOverride,omitempty"`
	// SchedulingGroup names the group the pod is scheduled with.
	SchedulingGroup *corev1.PodSchedulingGroup `json:"schedulingGroup,omitempty"`
	// EvictionResponders are asked before the pod is evicted.
	// +listType=atomic
	EvictionResponders []corev1.EvictionResponder `json:"evictionResponders,omitempty"`
}

// DNSPolicy says where a pod's resolv.conf points.
type DNSPolicy string

// DNS policies, Kubernetes' names.
const (
	DNSClusterFirstWithHostNet DNSPolicy = "ClusterFirstWithHostNet"
	DNSClusterFirst            DNSPolicy = "ClusterFirst"
	DNSDefault                 DNSPolicy = "Default"
	DNSNone                    DNSPolicy = "None"
)

// PodDNSConfig adds to a pod's resolv.conf.
type PodDNSConfig struct {
	// Nameservers are name server IPs, added after those of dnsPolicy, at
	// most 3 in all.
	// +listType=atomic
	Nameservers []string `json:"nameservers,omitempty"`
	// Searches are search domains, added after those of dnsPolicy, at most
	// 32 in all.
	// +listType=atomic
	Searches []string `json:"searches,omitempty"`
	// Options are resolver options; one here replaces one of the same name
	// from dnsPolicy.
	// +listType=atomic
	Options []PodDNSConfigOption `json:"options,omitempty"`
}

// PodDNSConfigOption is one resolver option.
type PodDNSConfigOption struct {
	// Name is the option's name, such as ndots.
	Name string `json:"name,omitempty"`
	// Value is the option's value, if it takes one.
	Value *string `json:"value,omitempty"`
}

// PreemptionPolicy says whether a pod may preempt lower-priority pods.
type PreemptionPolicy string

// Preemption policies.
const (
	PreemptLowerPriority PreemptionPolicy = "PreemptLowerPriority"
	PreemptNever         PreemptionPolicy = "Never"
)

// EphemeralContainer is a debugging container added to a running pod.
type EphemeralContainer struct {
	// The container; an ephemeral container may not have ports, probes,
	// lifecycle hooks or resources.
	Container `json:",inline"`
	// TargetContainerName is the container of the pod whose namespaces
	// (process, IPC) the ephemeral container joins.
	TargetContainerName string `json:"targetContainerName,omitempty"`
}

// RestartPolicy says when the agent restarts a pod's containers.
type RestartPolicy string

// Restart policies.
const (
	RestartPolicyAlways    RestartPolicy = "Always"
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	RestartPolicyNever     RestartPolicy = "Never"
)

// DefaultSchedulerName is the only scheduler berth has.
const DefaultSchedulerName = "default-scheduler"

// Container is one process of a pod.
type Container struct {
	// Name is the container's name, a DNS label unique within the pod; logs,
	// exec and container statuses go by it.
	Name string `json:"name"`
	// Image names the container's image, for people and other runtimes: the
	// exec runtime does not use it, and runs command on the node instead. A
	// container needs an image or a command.
	Image string `json:"image,omitempty"`
	// Command is the program and its first arguments, $(VAR) expanded; a
	// bare name is looked up in the container's PATH. The exec runtime needs
	// it, having no image entrypoint to fall back on.
	Command []string `json:"command,omitempty"`
	// Args follow command on the command line, after $(VAR) expansion with
	// the container's environment.
	Args []string `json:"args,omitempty"`
	// WorkingDir is the directory on the node the process starts in; when
	// empty the exec runtime starts it in the root directory.
	WorkingDir string `json:"workingDir,omitempty"`
	// Ports are the ports the process listens on. Under the exec runtime it
	// shares the node's network, so the scheduler treats each one as a host
	// port of the node.
	// +listType=map
	// +listMapKey=containerPort
	// +listMapKey=protocol
	Ports []ContainerPort `json:"ports,omitempty"`
	// EnvFrom imports every key of a ConfigMap's data or a Secret as a
	// variable, in order; keys that are not valid variable names are
	// skipped, and env wins over it.
	EnvFrom []EnvFromSource `json:"envFrom,omitempty"`
	// Env sets variables after envFrom, in order; a value may refer to
	// earlier variables as $(VAR).
	// +listType=map
	// +listMapKey=name
	Env []EnvVar `json:"env,omitempty"`
	// Resources are the container's requests and limits of cpu, memory and
	// ephemeral-storage.
	Resources ResourceRequirements `json:"resources,omitempty"`
	// VolumeMounts name the pod volumes the container uses and where. Their
	// paths must be unique, but the exec runtime mounts nothing: the process
	// finds each volume of the pod at the path in BERTH_VOLUME_<NAME>.
	// +listType=map
	// +listMapKey=mountPath
	VolumeMounts []VolumeMount `json:"volumeMounts,omitempty"`
	// LivenessProbe checks the running container; after failureThreshold
	// failures in a row the agent kills it and restarts it as restartPolicy
	// says.
	LivenessProbe *Probe `json:"livenessProbe,omitempty"`
	// ReadinessProbe decides whether the container is ready, and so whether
	// the pod is a ready endpoint of its services; without one a running
	// container is ready once started.
	ReadinessProbe *Probe `json:"readinessProbe,omitempty"`
	// StartupProbe holds off the other probes until it succeeds once; if it
	// fails failureThreshold times in a row the container is killed, and
	// restarted as restartPolicy says.
	StartupProbe *Probe `json:"startupProbe,omitempty"`
	// Lifecycle holds the hooks run after the container starts and before
	// it is stopped.
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	// SecurityContext sets the identity and privileges the process runs
	// with, over the pod's securityContext.
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`
	// Stdin gives the process an input that attach sessions (kubectl
	// attach -i, kubectl run -i) write to; without it the process reads
	// end of file at once, as from /dev/null.
	Stdin bool `json:"stdin,omitempty"`
	// StdinOnce closes the process's input when the first attach session
	// that wrote to it ends, so that a process reading to the end of its
	// input (kubectl run -i … -- cat) ends too; it stays closed until the
	// container restarts. Without it, input stays open across sessions and
	// the process never reads end of file.
	StdinOnce bool `json:"stdinOnce,omitempty"`
	// TTY runs the process on a terminal of its own: stdin, stdout and
	// stderr are the terminal, its output is one stream (in the log too),
	// and an attach session with a terminal sets its size. Kubernetes
	// expects stdin with it, but does not require it.
	TTY bool `json:"tty,omitempty"`

	// ImagePullPolicy is Always, IfNotPresent or Never: when the runtime
	// pulls the image. The default is Always for an image tagged :latest or
	// not tagged, IfNotPresent otherwise, as in Kubernetes. The exec runtime
	// pulls nothing.
	ImagePullPolicy PullPolicy `json:"imagePullPolicy,omitempty"`
	// TerminationMessagePath is the file in the container whose contents
	// become the message of its terminated state; /dev/termination-log by
	// default.
	TerminationMessagePath string `json:"terminationMessagePath,omitempty"`
	// TerminationMessagePolicy is File (the default: the message is the
	// file's) or FallbackToLogsOnError (the end of the log when the file
	// is empty and the container failed).
	TerminationMessagePolicy TerminationMessagePolicy `json:"terminationMessagePolicy,omitempty"`
	// RestartPolicy, on an init container, Always makes it a sidecar that
	// starts in order with the init containers and runs beside the
	// containers. On a container it overrides the pod's restartPolicy.
	RestartPolicy *ContainerRestartPolicy `json:"restartPolicy,omitempty"`

	// The fields below are held as Kubernetes' own types: stored, served
	// back and not interpreted (see PodSpec).

	// ResizePolicy says, per resource, whether changing it restarts the
	// container.
	// +listType=atomic
	ResizePolicy []corev1.ContainerResizePolicy `json:"resizePolicy,omitempty"`
	// RestartPolicyRules restart the container, or not, by its exit code,
	// ahead of restartPolicy.
	// +listType=atomic
	RestartPolicyRules []corev1.ContainerRestartRule `json:"restartPolicyRules,omitempty"`
	// VolumeDevices are block volumes of the pod given to the container as
	// devices.
	// +listType=map
	// +listMapKey=devicePath
	VolumeDevices []corev1.VolumeDevice `json:"volumeDevices,omitempty"`
}

// PullPolicy says when an image is pulled.
type PullPolicy string

// Pull policies.
const (
	PullAlways       PullPolicy = "Always"
	PullNever        PullPolicy = "Never"
	PullIfNotPresent PullPolicy = "IfNotPresent"
)

// TerminationMessagePolicy says where a container's termination message
// comes from.
type TerminationMessagePolicy string

// Termination message policies.
const (
	TerminationMessageReadFile              TerminationMessagePolicy = "File"
	TerminationMessageFallbackToLogsOnError TerminationMessagePolicy = "FallbackToLogsOnError"
)

// DefaultTerminationMessagePath is where a container's termination message
// is read from unless it says otherwise.
const DefaultTerminationMessagePath = "/dev/termination-log"

// ContainerRestartPolicy is a container's own restart policy.
type ContainerRestartPolicy string

// Container restart policies.
const (
	ContainerRestartPolicyAlways    ContainerRestartPolicy = "Always"
	ContainerRestartPolicyOnFailure ContainerRestartPolicy = "OnFailure"
	ContainerRestartPolicyNever     ContainerRestartPolicy = "Never"
)

// Protocol is a network protocol of a port.
type Protocol string

// Protocols.
const (
	ProtocolTCP  Protocol = "TCP"
	ProtocolUDP  Protocol = "UDP"
	ProtocolSCTP Protocol = "SCTP"
)

// ContainerPort is a port a container listens on.
type ContainerPort struct {
	// Name names the port (IANA_SVC_NAME, unique in the container), so that
	// a service's targetPort and a probe can refer to it.
	Name string `json:"name,omitempty"`
	// HostPort, when set, is a node port the scheduler reserves for the pod
	// besides containerPort. berth maps no ports: the process listens on
	// containerPort on the node itself.
	HostPort int32 `json:"hostPort,omitempty"`
	// HostIP is the node address the host port binds to.
	HostIP string `json:"hostIP,omitempty"`
	// ContainerPort is the port number the process listens on (1-65535);
	// the scheduler reserves it on the node, so no two pods there take it.
	ContainerPort int32 `json:"containerPort"`
	// Protocol is TCP (the default), UDP or SCTP.
	// +default="TCP"
	Protocol Protocol `json:"protocol,omitempty"`
}

// EnvVar is one environment variable of a container.
type EnvVar struct {
	// Name is the variable's name.
	Name string `json:"name"`
	// Value is the variable's value, with $(VAR) references to earlier
	// variables expanded; $$ is a literal $.
	Value string `json:"value,omitempty"`
	// ValueFrom takes the value from a field of the pod, a ConfigMap or a
	// Secret instead; value must then be empty.
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource takes a variable's value from the pod or another object.
type EnvVarSource struct {
	// FieldRef takes the value from a field of the pod (downward API).
	FieldRef *ObjectFieldSelector `json:"fieldRef,omitempty"`
	// ConfigMapKeyRef takes the value from a key of a ConfigMap in the pod's
	// namespace.
	ConfigMapKeyRef *ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
	// SecretKeyRef takes the value from a key of a Secret in the pod's
	// namespace.
	SecretKeyRef *SecretKeySelector `json:"secretKeyRef,omitempty"`
	// ResourceFieldRef takes the value from a request or limit of a
	// container of the pod.
	ResourceFieldRef *corev1.ResourceFieldSelector `json:"resourceFieldRef,omitempty"`
	// FileKeyRef takes the value from a key of an env file in a volume of
	// the pod.
	FileKeyRef *corev1.FileKeySelector `json:"fileKeyRef,omitempty"`
}

// ObjectFieldSelector names a field of the pod (downward API).
type ObjectFieldSelector struct {
	// APIVersion is the version of the pod's schema the path is in; only v1,
	// the default.
	APIVersion string `json:"apiVersion,omitempty"`
	// FieldPath is one of metadata.name, metadata.namespace, metadata.uid,
	// spec.nodeName, spec.serviceAccountName, status.hostIP and status.podIP
	// (under the exec runtime both IPs are the node's).
	FieldPath string `json:"fieldPath"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name is the name of the object, in the same namespace.
	Name string `json:"name,omitempty"`
}

// ConfigMapKeySelector names one key of a ConfigMap.
type ConfigMapKeySelector struct {
	LocalObjectReference `json:",inline"`
	// Key is the key to read, from data or else binaryData.
	Key string `json:"key"`
	// Optional leaves the variable out when the ConfigMap or its key is
	// missing; otherwise the container waits with CreateContainerConfigError
	// until they exist.
	Optional *bool `json:"optional,omitempty"`
}

// SecretKeySelector names one key of a Secret.
type SecretKeySelector struct {
	LocalObjectReference `json:",inline"`
	// Key is the key of the Secret to read.
	Key string `json:"key"`
	// Optional leaves the variable out when the Secret or its key is
	// missing; otherwise the container waits with CreateContainerConfigError
	// until they exist.
	Optional *bool `json:"optional,omitempty"`
}

// EnvFromSource imports every key of a ConfigMap or Secret.
type EnvFromSource struct {
	// Prefix is put before every imported key; the result must be a valid
	// variable name.
	Prefix string `json:"prefix,omitempty"`
	// ConfigMapRef imports the keys of a ConfigMap's data (not binaryData).
	ConfigMapRef *ConfigMapEnvSource `json:"configMapRef,omitempty"`
	// SecretRef imports the keys of a Secret.
	SecretRef *SecretEnvSource `json:"secretRef,omitempty"`
}

// ConfigMapEnvSource names a ConfigMap for envFrom.
type ConfigMapEnvSource struct {
	LocalObjectReference `json:",inline"`
	// Optional lets the container start without the ConfigMap.
	Optional *bool `json:"optional,omitempty"`
}

// SecretEnvSource names a Secret for envFrom.
type SecretEnvSource struct {
	LocalObjectReference `json:",inline"`
	// Optional lets the container start without the Secret.
	Optional *bool `json:"optional,omitempty"`
}

// ResourceName names a resource such as cpu or memory.
type ResourceName string

// Resource names.
const (
	ResourceCPU              ResourceName = "cpu"
	ResourceMemory           ResourceName = "memory"
	ResourceEphemeralStorage ResourceName = "ephemeral-storage"
	ResourceStorage          ResourceName = "storage"
	ResourcePods             ResourceName = "pods"
)

// ResourceList maps resource names to quantities.
type ResourceList map[ResourceName]resource.Quantity

// ResourceRequirements are a container's requests and limits.
type ResourceRequirements struct {
	// Limits cap what the container may use: the exec runtime enforces cpu
	// and memory through cgroups where the node allows it; the agent evicts
	// a pod over its ephemeral-storage, as the kubelet does: the sum of
	// its containers' limits against its emptyDir and configMap volumes and
	// its containers' logs, and each container's against its logs (what an
	// exec container writes elsewhere on the node is not counted). A limit
	// with no request is also the request.
	Limits ResourceList `json:"limits,omitempty"`
	// Requests are what the scheduler reserves for the container on its
	// node; they also set the pod's QoS class, which orders eviction, and
	// count against resource quotas.
	Requests ResourceList `json:"requests,omitempty"`
	// Claims name the pod's resourceClaims the container uses.
	// +listType=map
	// +listMapKey=name
	Claims []corev1.ResourceClaim `json:"claims,omitempty"`
}

// VolumeMount places a pod volume inside a container.
type VolumeMount struct {
	// Name is the pod volume to mount.
	Name string `json:"name"`
	// ReadOnly is accepted and shown by berth describe, but not enforced:
	// the exec runtime mounts nothing.
	ReadOnly bool `json:"readOnly,omitempty"`
	// MountPath is where the volume appears in the container, unique within
	// it. The exec runtime mounts nothing there; only a runtime that
	// isolates the filesystem would.
	MountPath string `json:"mountPath"`
	// SubPath is a path inside the volume to mount instead of its root;
	// checked as a relative path and not applied by the exec runtime.
	SubPath string `json:"subPath,omitempty"`
	// RecursiveReadOnly makes a read-only mount read-only in all its
	// submounts too: Disabled (the default), IfPossible or Enabled.
	RecursiveReadOnly *corev1.RecursiveReadOnlyMode `json:"recursiveReadOnly,omitempty"`
	// MountPropagation is None (the default), HostToContainer or
	// Bidirectional.
	MountPropagation *corev1.MountPropagationMode `json:"mountPropagation,omitempty"`
	// SubPathExpr is subPath with $(VAR) expanded from the container's
	// environment; at most one of the two is set.
	SubPathExpr string `json:"subPathExpr,omitempty"`
	// BindMountOptions are further options of the bind mount.
	// +listType=atomic
	BindMountOptions []string `json:"bindMountOptions,omitempty"`
}

// Probe checks a container's health.
type Probe struct {
	ProbeHandler `json:",inline"`
	// InitialDelaySeconds is how long after the container starts the first
	// probe runs.
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	// TimeoutSeconds bounds one probe; a probe that takes longer fails. 1 by
	// default.
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// PeriodSeconds is the time between probes, 10 by default.
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
	// SuccessThreshold is how many successes in a row make a failing probe
	// pass again, 1 by default; it must be 1 for liveness and startup
	// probes.
	SuccessThreshold int32 `json:"successThreshold,omitempty"`
	// FailureThreshold is how many failures in a row make the probe fail, 3
	// by default.
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
	// TerminationGracePeriodSeconds, for a liveness or startup probe, is the
	// grace the container gets when the probe fails, in place of the pod's.
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// ProbeHandler is the action of a probe: exactly one field is set.
type ProbeHandler struct {
	// Exec runs a command in the container: exit 0 is success.
	Exec *ExecAction `json:"exec,omitempty"`
	// HTTPGet sends an HTTP GET: a status in [200,400) is success.
	HTTPGet *HTTPGetAction `json:"httpGet,omitempty"`
	// TCPSocket opens a TCP connection: connecting is success.
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
	// GRPC calls the gRPC health checking service of the container.
	GRPC *corev1.GRPCAction `json:"grpc,omitempty"`
}

// ExecAction runs a command; exit 0 is success.
type ExecAction struct {
	// Command is the command line, run directly (not through a shell) with
	// the container's environment, user and working directory.
	Command []string `json:"command,omitempty"`
}

// URIScheme is http or https.
type URIScheme string

// URI schemes.
const (
	URISchemeHTTP  URIScheme = "HTTP"
	URISchemeHTTPS URIScheme = "HTTPS"
)

// HTTPHeader is a header sent by an httpGet probe.
type HTTPHeader struct {
	// Name is the header's name; Host sets the request's host.
	Name string `json:"name"`
	// Value is the header's value.
	Value string `json:"value"`
}

// HTTPGetAction is an HTTP GET; a status in [200,400) is success.
type HTTPGetAction struct {
	// Path is the path to request, / by default.
	Path string `json:"path,omitempty"`
	// Port is the port number, or the name of one of the container's ports.
	Port intstr.IntOrString `json:"port"`
	// Host is the host to connect to; the pod's IP (under the exec runtime,
	// the node's) by default.
	Host string `json:"host,omitempty"`
	// Scheme is HTTP (the default) or HTTPS; the certificate of an HTTPS
	// server is not checked.
	Scheme URIScheme `json:"scheme,omitempty"`
	// HTTPHeaders are headers sent with the request.
	HTTPHeaders []HTTPHeader `json:"httpHeaders,omitempty"`
	// Protocol is the HTTP version the probe speaks.
	Protocol *corev1.HTTPProtocol `json:"protocol,omitempty"`
}

// TCPSocketAction opens a TCP connection; a connection is success.
type TCPSocketAction struct {
	// Port is the port number, or the name of one of the container's ports.
	Port intstr.IntOrString `json:"port"`
	// Host is the host to connect to; the pod's IP (under the exec runtime,
	// the node's) by default.
	Host string `json:"host,omitempty"`
}

// Lifecycle holds hooks around a container's life.
type Lifecycle struct {
	// PostStart runs as soon as the container has started; the container
	// is not running until it ends, and is killed if it fails.
	PostStart *LifecycleHandler `json:"postStart,omitempty"`
	// PreStop runs before the container is stopped, with its pod (deleted or
	// evicted) or for a failed liveness or startup probe, within the
	// termination grace period; if it fails the container is stopped
	// anyway.
	PreStop *LifecycleHandler `json:"preStop,omitempty"`
	// StopSignal is the signal that stops the container, in place of its
	// image's.
	StopSignal *corev1.Signal `json:"stopSignal,omitempty"`
}

// LifecycleHandler is a hook's action: exactly one field is set.
type LifecycleHandler struct {
	// Exec runs a command in the container.
	Exec *ExecAction `json:"exec,omitempty"`
	// HTTPGet sends an HTTP GET to the container.
	HTTPGet *HTTPGetAction `json:"httpGet,omitempty"`
	// TCPSocket is accepted for compatibility and does nothing, as in
	// Kubernetes.
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
	// Sleep waits a number of seconds.
	Sleep *corev1.SleepAction `json:"sleep,omitempty"`
}

// Affinity holds a pod's node and pod affinity rules.
type Affinity struct {
	// NodeAffinity constrains and ranks the nodes the scheduler may place
	// the pod on, by their labels and names.
	NodeAffinity *NodeAffinity `json:"nodeAffinity,omitempty"`
	// PodAffinity draws the pod to the topology domains of pods it
	// selects: required terms filter nodes, preferred ones rank them.
	PodAffinity *corev1.PodAffinity `json:"podAffinity,omitempty"`
	// PodAntiAffinity keeps the pod off nodes that run pods it selects.
	PodAntiAffinity *PodAntiAffinity `json:"podAntiAffinity,omitempty"`
}

// NodeAffinity constrains which nodes a pod may run on.
type NodeAffinity struct {
	// RequiredDuringSchedulingIgnoredDuringExecution must match a node for
	// the pod to be placed there. A later change of the node's labels does
	// not move the pod.
	RequiredDuringSchedulingIgnoredDuringExecution *NodeSelector `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	// PreferredDuringSchedulingIgnoredDuringExecution ranks the nodes that
	// fit: each term a node matches adds its weight to the node's score.
	PreferredDuringSchedulingIgnoredDuringExecution []PreferredSchedulingTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// NodeSelector is an OR of terms.
type NodeSelector struct {
	// NodeSelectorTerms are ORed: a node matches when it matches one of
	// them. There must be at least one.
	NodeSelectorTerms []NodeSelectorTerm `json:"nodeSelectorTerms"`
}

// NodeSelectorTerm is an AND of requirements.
type NodeSelectorTerm struct {
	// MatchExpressions are requirements on the node's labels, all of which
	// must hold.
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions,omitempty"`
	// MatchFields are requirements on the node's fields: only metadata.name,
	// with In or NotIn and one value.
	MatchFields []NodeSelectorRequirement `json:"matchFields,omitempty"`
}

// NodeSelectorOperator relates a label key to values.
type NodeSelectorOperator string

// Node selector operators.
const (
	NodeSelectorOpIn           NodeSelectorOperator = "In"
	NodeSelectorOpNotIn        NodeSelectorOperator = "NotIn"
	NodeSelectorOpExists       NodeSelectorOperator = "Exists"
	NodeSelectorOpDoesNotExist NodeSelectorOperator = "DoesNotExist"
	NodeSelectorOpGt           NodeSelectorOperator = "Gt"
	NodeSelectorOpLt           NodeSelectorOperator = "Lt"
)

// NodeSelectorRequirement is one requirement on a node label or field.
type NodeSelectorRequirement struct {
	// Key is the label (or field) the requirement is on.
	Key string `json:"key"`
	// Operator is In, NotIn, Exists, DoesNotExist, Gt or Lt.
	Operator NodeSelectorOperator `json:"operator"`
	// Values are the values for In and NotIn (at least one), or the one
	// integer Gt and Lt compare to; empty for Exists and DoesNotExist.
	Values []string `json:"values,omitempty"`
}

// PreferredSchedulingTerm is a weighted preference for nodes.
type PreferredSchedulingTerm struct {
	// Weight is what matching the term adds to a node's score, 1 to 100.
	Weight int32 `json:"weight"`
	// Preference is the term a node should match.
	Preference NodeSelectorTerm `json:"preference"`
}

// PodAntiAffinity keeps pods apart.
type PodAntiAffinity struct {
	// RequiredDuringSchedulingIgnoredDuringExecution are terms the scheduler
	// keeps: the pod goes on no node that runs a pod a term selects, nor on
	// one whose pods' own terms select it.
	RequiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	// PreferredDuringSchedulingIgnoredDuringExecution are weighted terms:
	// a node in a domain holding pods a term selects scores lower by the
	// term's weight.
	// +listType=atomic
	PreferredDuringSchedulingIgnoredDuringExecution []corev1.WeightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// PodAffinityTerm selects pods within a topology domain.
type PodAffinityTerm struct {
	// LabelSelector selects the pods to keep away from; without one the term
	// selects no pod.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Namespaces are where the selected pods are looked for; the pod's own
	// namespace when empty.
	Namespaces []string `json:"namespaces,omitempty"`
	// TopologyKey is the node label whose value makes a domain: the nodes
	// that share its value; a node without the label is in none.
	TopologyKey string `json:"topologyKey"`
	// NamespaceSelector selects further namespaces, by their labels, to
	// look for the pods in; {} selects every namespace.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// MatchLabelKeys are label keys of the pod whose values are added to
	// labelSelector as In requirements.
	// +listType=atomic
	MatchLabelKeys []string `json:"matchLabelKeys,omitempty"`
	// MismatchLabelKeys are label keys of the pod whose values are added
	// to labelSelector as NotIn requirements.
	// +listType=atomic
	MismatchLabelKeys []string `json:"mismatchLabelKeys,omitempty"`
}

// TolerationOperator relates a toleration's key to a taint's value.
type TolerationOperator string

// Toleration operators.
const (
	TolerationOpExists TolerationOperator = "Exists"
	TolerationOpEqual  TolerationOperator = "Equal"
)

// Toleration lets a pod run on a node with a matching taint.
type Toleration struct {
	// Key is the taint key tolerated; empty, with operator Exists, matches
	// every key.
	Key string `json:"key,omitempty"`
	// Operator is Equal (the default), which compares value to the taint's,
	// or Exists, which tolerates any value.
	Operator TolerationOperator `json:"operator,omitempty"`
	// Value is the taint value tolerated with operator Equal; empty with
	// Exists.
	Value string `json:"value,omitempty"`
	// Effect is the taint effect tolerated; empty tolerates every effect.
	Effect TaintEffect `json:"effect,omitempty"`
	// TolerationSeconds, for effect NoExecute only, is how long the pod
	// stays on a node after a NoExecute taint it tolerates was added;
	// unset, it stays.
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// Volume is a pod volume; exactly one source is set.
type Volume struct {
	// Name is the volume's name, a DNS label unique within the pod, named by
	// volumeMounts and by BERTH_VOLUME_<NAME>.
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource is where a pod volume's contents come from.
type VolumeSource struct {
	// EmptyDir is a directory made for the pod on its node and removed with
	// it, mode 0777 as in Kubernetes, so that containers that run as other
	// users may write in it.
	EmptyDir *EmptyDirVolumeSource `json:"emptyDir,omitempty"`
	// HostPath is a path on the node, given to the process as it is.
	HostPath *HostPathVolumeSource `json:"hostPath,omitempty"`
	// PersistentVolumeClaim uses the directory of the volume bound to a
	// claim; the pod waits until the claim is bound.
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	// ConfigMap writes a ConfigMap's keys as files, rewritten from the
	// ConfigMap every minute.
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`
	// Secret writes a Secret's keys as files, rewritten from the Secret
	// every minute.
	Secret *SecretVolumeSource `json:"secret,omitempty"`

	// The sources below are held as Kubernetes' own types: berth stores
	// them and no runtime of berth sets them up yet, so a node refuses a
	// pod that has one (docs/runtimes.md).

	// Projected puts several sources (secrets, config maps, downward API,
	// service account tokens, cluster trust bundles) in one directory.
	Projected *corev1.ProjectedVolumeSource `json:"projected,omitempty"`
	// DownwardAPI writes fields of the pod as files.
	DownwardAPI *corev1.DownwardAPIVolumeSource `json:"downwardAPI,omitempty"`
	// Ephemeral is a volume claimed for the pod from a claim template and
	// deleted with it.
	Ephemeral *corev1.EphemeralVolumeSource `json:"ephemeral,omitempty"`
	// CSI is a volume of a CSI driver.
	CSI *corev1.CSIVolumeSource `json:"csi,omitempty"`
	// NFS is an NFS export.
	NFS *corev1.NFSVolumeSource `json:"nfs,omitempty"`
	// Image is the contents of an OCI image or artifact.
	Image *corev1.ImageVolumeSource `json:"image,omitempty"`
	// ISCSI is an iSCSI disk.
	ISCSI *corev1.ISCSIVolumeSource `json:"iscsi,omitempty"`
	// FC is a Fibre Channel disk.
	FC *corev1.FCVolumeSource `json:"fc,omitempty"`
	// GitRepo is a git repository cloned for the pod (deprecated in
	// Kubernetes).
	GitRepo *corev1.GitRepoVolumeSource `json:"gitRepo,omitempty"`
	// GCEPersistentDisk is a GCE disk (deprecated in Kubernetes).
	GCEPersistentDisk *corev1.GCEPersistentDiskVolumeSource `json:"gcePersistentDisk,omitempty"`
	// AWSElasticBlockStore is an AWS disk (deprecated in Kubernetes).
	AWSElasticBlockStore *corev1.AWSElasticBlockStoreVolumeSource `json:"awsElasticBlockStore,omitempty"`
	// Glusterfs is a GlusterFS volume (removed from Kubernetes' nodes).
	Glusterfs *corev1.GlusterfsVolumeSource `json:"glusterfs,omitempty"`
	// RBD is a Ceph block device (deprecated in Kubernetes).
	RBD *corev1.RBDVolumeSource `json:"rbd,omitempty"`
	// FlexVolume is a volume of a FlexVolume driver (deprecated).
	FlexVolume *corev1.FlexVolumeSource `json:"flexVolume,omitempty"`
	// Cinder is an OpenStack Cinder volume (deprecated in Kubernetes).
	Cinder *corev1.CinderVolumeSource `json:"cinder,omitempty"`
	// CephFS is a CephFS mount (deprecated in Kubernetes).
	CephFS *corev1.CephFSVolumeSource `json:"cephfs,omitempty"`
	// Flocker is a Flocker volume (deprecated in Kubernetes).
	Flocker *corev1.FlockerVolumeSource `json:"flocker,omitempty"`
	// AzureFile is an Azure file share (deprecated in Kubernetes).
	AzureFile *corev1.AzureFileVolumeSource `json:"azureFile,omitempty"`
	// VsphereVolume is a vSphere disk (deprecated in Kubernetes).
	VsphereVolume *corev1.VsphereVirtualDiskVolumeSource `json:"vsphereVolume,omitempty"`
	// Quobyte is a Quobyte volume (deprecated in Kubernetes).
	Quobyte *corev1.QuobyteVolumeSource `json:"quobyte,omitempty"`
	// AzureDisk is an Azure disk (deprecated in Kubernetes).
	AzureDisk *corev1.AzureDiskVolumeSource `json:"azureDisk,omitempty"`
	// PhotonPersistentDisk is a Photon disk (deprecated in Kubernetes).
	PhotonPersistentDisk *corev1.PhotonPersistentDiskVolumeSource `json:"photonPersistentDisk,omitempty"`
	// PortworxVolume is a Portworx volume (deprecated in Kubernetes).
	PortworxVolume *corev1.PortworxVolumeSource `json:"portworxVolume,omitempty"`
	// ScaleIO is a ScaleIO volume (removed from Kubernetes' nodes).
	ScaleIO *corev1.ScaleIOVolumeSource `json:"scaleIO,omitempty"`
	// StorageOS is a StorageOS volume (removed from Kubernetes' nodes).
	StorageOS *corev1.StorageOSVolumeSource `json:"storageos,omitempty"`
}

// StorageMedium is where an emptyDir lives.
type StorageMedium string

// Storage media.
const (
	StorageMediumDefault StorageMedium = ""
	StorageMediumMemory  StorageMedium = "Memory"
)

// EmptyDirVolumeSource is scratch space that lives as long as the pod.
type EmptyDirVolumeSource struct {
	// Medium is "" for a directory on the node's disk, or Memory for a
	// tmpfs; where the agent may not mount, a Memory volume is a plain
	// directory and a warning says so.
	Medium StorageMedium `json:"medium,omitempty"`
	// SizeLimit is the size of a Memory volume's tmpfs; the agent evicts a
	// pod whose volume holds more, as the kubelet does.
	SizeLimit *resource.Quantity `json:"sizeLimit,omitempty"`
	// Mode is the directory's permission bits, 0777 when unset.
	Mode *int32 `json:"mode,omitempty"`
}

// HostPathType checks what a hostPath must be.
type HostPathType string

// Host path types.
const (
	HostPathUnset             HostPathType = ""
	HostPathDirectoryOrCreate HostPathType = "DirectoryOrCreate"
	HostPathDirectory         HostPathType = "Directory"
	HostPathFileOrCreate      HostPathType = "FileOrCreate"
	HostPathFile              HostPathType = "File"
	HostPathSocket            HostPathType = "Socket"
	HostPathCharDev           HostPathType = "CharDevice"
	HostPathBlockDev          HostPathType = "BlockDevice"
)

// HostPathVolumeSource is a path on the node.
type HostPathVolumeSource struct {
	// Path is the path on the node; it may not contain "..".
	Path string `json:"path"`
	// Type is what the path must be, which the agent checks before the pod
	// starts, making it when missing for DirectoryOrCreate and FileOrCreate;
	// unset checks nothing. A PersistentVolume's path is not checked.
	Type *HostPathType `json:"type,omitempty"`
}

// PersistentVolumeClaimVolumeSource mounts a claim's volume.
type PersistentVolumeClaimVolumeSource struct {
	// ClaimName is a claim in the pod's namespace.
	ClaimName string `json:"claimName"`
	// ReadOnly is accepted and shown by berth describe, but not enforced:
	// the process gets the volume's directory as it is.
	ReadOnly bool `json:"readOnly,omitempty"`
}

// KeyToPath projects one key to a file.
type KeyToPath struct {
	// Key is the key to project; while an existing object lacks it, the pod
	// waits with CreateContainerConfigError.
	Key string `json:"key"`
	// Path is the file's path, relative to the volume, without "..".
	Path string `json:"path"`
	// Mode is the file's permission bits (0 to 0777), defaultMode when
	// unset.
	Mode *int32 `json:"mode,omitempty"`
	// User is the file's owner UID, defaultUser when unset.
	User *int64 `json:"user,omitempty"`
}

// ConfigMapVolumeSource projects a ConfigMap's keys as files.
type ConfigMapVolumeSource struct {
	LocalObjectReference `json:",inline"`
	// Items project only these keys, each to its path; when empty, every key
	// of data and binaryData becomes a file of its name.
	Items []KeyToPath `json:"items,omitempty"`
	// DefaultMode is the permission bits of the files, 0644 by default.
	DefaultMode *int32 `json:"defaultMode,omitempty"`
	// Optional lets the pod start with an empty volume when the ConfigMap is
	// missing.
	Optional *bool `json:"optional,omitempty"`
	// DefaultUser is the owner UID of the files, the agent's user when
	// unset.
	DefaultUser *int64 `json:"defaultUser,omitempty"`
}

// SecretVolumeSource projects a Secret's keys as files.
type SecretVolumeSource struct {
	// SecretName is a Secret in the pod's namespace.
	SecretName string `json:"secretName,omitempty"`
	// Items project only these keys, each to its path; when empty, every key
	// becomes a file of its name.
	Items []KeyToPath `json:"items,omitempty"`
	// DefaultMode is the permission bits of the files, 0644 by default.
	DefaultMode *int32 `json:"defaultMode,omitempty"`
	// Optional lets the pod start with an empty volume when the Secret is
	// missing.
	Optional *bool `json:"optional,omitempty"`
	// DefaultUser is the owner UID of the files, the agent's user when
	// unset.
	DefaultUser *int64 `json:"defaultUser,omitempty"`
}

// PodPhase is the coarse state of a pod.
type PodPhase string

// Pod phases.
const (
	PodPending   PodPhase = "Pending"
	PodRunning   PodPhase = "Running"
	PodSucceeded PodPhase = "Succeeded"
	PodFailed    PodPhase = "Failed"
	PodUnknown   PodPhase = "Unknown"
)

// PodConditionType names a pod condition.
type PodConditionType string

// Pod condition types.
const (
	PodScheduled    PodConditionType = "PodScheduled"
	PodInitialized  PodConditionType = "Initialized"
	ContainersReady PodConditionType = "ContainersReady"
	PodReady        PodConditionType = "Ready"
)

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Reasons for pod conditions.
const (
	PodReasonUnschedulable = "Unschedulable"
	// PodReasonSchedulingGated: the pod has scheduling gates, so the
	// scheduler leaves it alone until they are all removed.
	PodReasonSchedulingGated = "SchedulingGated"
	// PodReasonPreemptionByScheduler is the reason of the DisruptionTarget
	// condition of a pod the scheduler preempts.
	PodReasonPreemptionByScheduler = "PreemptionByScheduler"
)

// PodDisruptionTarget is the condition a pod gets when it is about to be
// deleted for a disruption (preemption, eviction), as Kubernetes sets it.
const PodDisruptionTarget PodConditionType = "DisruptionTarget"

// PodCondition is one condition of a pod.
type PodCondition struct {
	// Type is PodScheduled (set by the scheduler), Initialized,
	// ContainersReady or Ready (set by the node's agent).
	Type PodConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// LastProbeTime is not set by berth.
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// LastTransitionTime is when status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is why the condition is as it is, in one CamelCase word, such
	// as Unschedulable.
	Reason string `json:"reason,omitempty"`
	// Message says why in words, such as which nodes the scheduler turned
	// down and why.
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the pod's metadata.generation the condition
	// was set from.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// PodIP is one IP of a pod.
type PodIP struct {
	// IP is the address; under the exec runtime, the node's.
	IP string `json:"ip"`
}

// PodStatus is what the agent and scheduler report about a pod.
type PodStatus struct {
	// Phase is Pending until the containers start, then Running, and
	// Succeeded or Failed once every container has ended for good; an
	// evicted pod is Failed.
	Phase PodPhase `json:"phase,omitempty"`
	// Conditions are PodScheduled, Initialized, ContainersReady and Ready.
	// +listType=map
	// +listMapKey=type
	Conditions []PodCondition `json:"conditions,omitempty"`
	// Message says in words why the pod is in its state, such as why it was
	// evicted.
	Message string `json:"message,omitempty"`
	// Reason is why the pod is in its state, in one CamelCase word, such as
	// Evicted.
	Reason string `json:"reason,omitempty"`
	// HostIP is the IP of the node the pod runs on.
	HostIP string `json:"hostIP,omitempty"`
	// PodIP is the pod's IP: under the exec runtime pods share their node's
	// network, so it is the node's IP. Endpoints list the pod once it has
	// one.
	PodIP string `json:"podIP,omitempty"`
	// PodIPs lists the pod's IPs, podIP first.
	// +listType=map
	// +listMapKey=ip
	PodIPs []PodIP `json:"podIPs,omitempty"`
	// StartTime is when the node's agent first reported the pod.
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// InitContainerStatuses are the init containers' states, in spec order.
	InitContainerStatuses []ContainerStatus `json:"initContainerStatuses,omitempty"`
	// ContainerStatuses are the containers' states, in spec order.
	ContainerStatuses []ContainerStatus `json:"containerStatuses,omitempty"`
	// QOSClass is Guaranteed, Burstable or BestEffort, from the containers'
	// requests and limits of cpu and memory, fixed when the pod is made. The
	// agent evicts BestEffort pods first and Guaranteed ones last.
	QOSClass QOSClass `json:"qosClass,omitempty"`
	// ObservedGeneration is the pod's metadata.generation the status was
	// made from.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// NominatedNodeName is the node a preempting pod waits for.
	NominatedNodeName string `json:"nominatedNodeName,omitempty"`
	// HostIPs lists the node's IPs, hostIP first.
	// +listType=atomic
	HostIPs []HostIP `json:"hostIPs,omitempty"`
	// EphemeralContainerStatuses are the ephemeral containers' states.
	// +listType=atomic
	EphemeralContainerStatuses []ContainerStatus `json:"ephemeralContainerStatuses,omitempty"`

	// The fields below are held as Kubernetes' own types; berth's agents
	// do not set them.

	// Resize is deprecated in Kubernetes in favour of conditions.
	Resize corev1.PodResizeStatus `json:"resize,omitempty"`
	// ResourceClaimStatuses name the claims made for the pod.
	// +listType=map
	// +listMapKey=name
	ResourceClaimStatuses []corev1.PodResourceClaimStatus `json:"resourceClaimStatuses,omitempty"`
	// ExtendedResourceClaimStatus names the claim made for the pod's
	// extended resources.
	ExtendedResourceClaimStatus *corev1.PodExtendedResourceClaimStatus `json:"extendedResourceClaimStatus,omitempty"`
	// AllocatedResources are the pod-level resources allocated on the node.
	AllocatedResources ResourceList `json:"allocatedResources,omitempty"`
	// Resources are the pod-level resources the node applied.
	Resources *ResourceRequirements `json:"resources,omitempty"`
	// NodeAllocatableResourceClaimStatuses are the node-allocatable
	// resources of the pod's claims.
	// +listType=map
	// +listMapKey=resourceClaimName
	NodeAllocatableResourceClaimStatuses []corev1.NodeAllocatableResourceClaimStatus `json:"nodeAllocatableResourceClaimStatuses,omitempty"`
	// VolumeHealth is the health of each volume the node reports.
	// +listType=atomic
	VolumeHealth []corev1.PodVolumeHealth `json:"volumeHealth,omitempty"`
}

// HostIP is one IP of a pod's node.
type HostIP struct {
	// IP is the address.
	IP string `json:"ip"`
}

// QOSClass is a pod's quality-of-service class.
type QOSClass string

// QoS classes.
const (
	QOSGuaranteed QOSClass = "Guaranteed"
	QOSBurstable  QOSClass = "Burstable"
	QOSBestEffort QOSClass = "BestEffort"
)

// ContainerStatus is the observed state of one container.
type ContainerStatus struct {
	// Name is the container's name.
	Name string `json:"name"`
	// State is the container's current state.
	State ContainerState `json:"state,omitempty"`
	// LastState is how its previous run ended, if it has had one.
	LastState ContainerState `json:"lastState,omitempty"`
	// Ready says the container passes its readiness probe (with none: it
	// runs and has started).
	Ready bool `json:"ready"`
	// RestartCount counts the container's restarts.
	RestartCount int32 `json:"restartCount"`
	// Image is the image the container's spec names.
	Image string `json:"image"`
	// ImageID is empty: the exec runtime runs no image.
	ImageID string `json:"imageID"`
	// ContainerID names the container's current run:
	// berth-exec://<pod-uid>/<container>/<attempt>.
	ContainerID string `json:"containerID,omitempty"`
	// Started says the container runs and has passed its startup probe, if
	// it has one.
	Started *bool `json:"started,omitempty"`
	// AllocatedResources are the resources the node allocated to the
	// container.
	AllocatedResources ResourceList `json:"allocatedResources,omitempty"`
	// Resources are the requests and limits the runtime applied.
	Resources *ResourceRequirements `json:"resources,omitempty"`
	// VolumeMounts are the container's mounts as the runtime made them.
	// +listType=map
	// +listMapKey=mountPath
	VolumeMounts []corev1.VolumeMountStatus `json:"volumeMounts,omitempty"`
	// User is the identity the process runs with.
	User *corev1.ContainerUser `json:"user,omitempty"`
	// AllocatedResourcesStatus is the health of the container's allocated
	// resources.
	// +listType=map
	// +listMapKey=name
	AllocatedResourcesStatus []corev1.ResourceStatus `json:"allocatedResourcesStatus,omitempty"`
	// StopSignal is the signal that stops the container.
	StopSignal *corev1.Signal `json:"stopSignal,omitempty"`
}

// ContainerState is one of waiting, running or terminated.
type ContainerState struct {
	// Waiting is set while the container does not run and is to run.
	Waiting *ContainerStateWaiting `json:"waiting,omitempty"`
	// Running is set while the container runs.
	Running *ContainerStateRunning `json:"running,omitempty"`
	// Terminated is set once the run ended.
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

// ContainerStateWaiting is a container not yet running.
type ContainerStateWaiting struct {
	// Reason is why the container waits: ContainerCreating, PodInitializing,
	// CrashLoopBackOff, CreateContainerConfigError or CreateContainerError.
	Reason string `json:"reason,omitempty"`
	// Message says why in words, such as the ConfigMap that is missing.
	Message string `json:"message,omitempty"`
}

// ContainerStateRunning is a running container.
type ContainerStateRunning struct {
	// StartedAt is when the run started.
	StartedAt metav1.Time `json:"startedAt,omitempty"`
}

// ContainerStateTerminated is a container that exited.
type ContainerStateTerminated struct {
	// ExitCode is the process's exit status; 128 plus the signal's number
	// when a signal killed it.
	ExitCode int32 `json:"exitCode"`
	// Signal is the signal that killed the process, 0 if none did.
	Signal int32 `json:"signal,omitempty"`
	// Reason is Completed (exit 0), Error, OOMKilled, StartError (the
	// process could not be started) or ContainerStatusUnknown (the agent
	// lost track of it).
	Reason string `json:"reason,omitempty"`
	// Message says more, such as why the process could not start.
	Message string `json:"message,omitempty"`
	// StartedAt is when the run started.
	StartedAt metav1.Time `json:"startedAt,omitempty"`
	// FinishedAt is when the run ended.
	FinishedAt metav1.Time `json:"finishedAt,omitempty"`
	// ContainerID names the run that ended, as containerID does.
	ContainerID string `json:"containerID,omitempty"`
}

// PodTemplateSpec is the pod a workload creates.
type PodTemplateSpec struct {
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the spec of the pods made from the template; their
	// restartPolicy must be Always.
	Spec PodSpec `json:"spec,omitempty"`
}

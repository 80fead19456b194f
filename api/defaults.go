package api

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Default fills in the fields a manifest may leave out with the values
// Kubernetes gives them, so that controllers, the scheduler and the agent
// never have to guess, and an object reads the same whether it came from a
// source, the API or a controller. It changes obj in place; applying it
// twice changes nothing the second time.
func Default(obj Object) { defaultAs(obj, KindOf(obj)) }

// defaultAs is Default of an object of kind k (see validateAs).
func defaultAs(obj Object, k *Kind) {
	if k != nil && k.Namespaced && obj.GetNamespace() == "" {
		obj.SetNamespace(NamespaceDefault)
	}
	switch o := obj.(type) {
	case *CustomResourceDefinition:
		defaultCRD(o)
	case *ValidatingWebhookConfiguration:
		defaultValidatingWebhookConfiguration(o)
	case *MutatingWebhookConfiguration:
		defaultMutatingWebhookConfiguration(o)
	case *ValidatingAdmissionPolicy:
		defaultValidatingAdmissionPolicy(o)
	case *ValidatingAdmissionPolicyBinding:
		defaultValidatingAdmissionPolicyBinding(o)
	case *Namespace:
		defaultNamespace(o)
	case *Pod:
		defaultPodSpec(&o.Spec)
		defaultPodRequests(&o.Spec)
		defaultPodOnly(&o.Spec)
	case *Service:
		defaultService(o)
	case *Endpoints:
		for i := range o.Subsets {
			for j := range o.Subsets[i].Ports {
				defaultProtocol(&o.Subsets[i].Ports[j].Protocol)
			}
		}
	case *EndpointSlice:
		defaultEndpointSlicePorts(o.Ports)
	case *ReplicationController:
		defaultReplicationController(o)
	case *ReplicaSet:
		defaultReplicas(&o.Spec.Replicas)
		defaultPodSpec(&o.Spec.Template.Spec)
	case *Deployment:
		defaultDeployment(o)
	case *Job:
		defaultJobSpec(&o.Spec)
	case *CronJob:
		defaultCronJob(o)
	case *StatefulSet:
		defaultStatefulSet(o)
	case *DaemonSet:
		defaultDaemonSet(o)
	case *PersistentVolume:
		defaultPersistentVolume(o)
	case *PersistentVolumeClaim:
		defaultVolumeMode(&o.Spec.VolumeMode)
	case *StorageClass:
		defaultStorageClass(o)
	case *RoleBinding:
		defaultSubjects(o.Subjects, &o.RoleRef)
	case *ClusterRoleBinding:
		defaultSubjects(o.Subjects, &o.RoleRef)
	case *LimitRange:
		defaultLimitRange(o)
	case *NetworkPolicy:
		defaultNetworkPolicy(o)
	case *PriorityClass:
		defaultPriorityClass(o)
	case *HorizontalPodAutoscaler:
		defaultHPA(o)
	case *Secret:
		if o.Type == "" {
			o.Type = SecretTypeOpaque
		}
	}
	DefaultStatus(obj)
}

// DefaultStatus gives an object's status its defaults, and writes nothing
// else: a status write defaults only the status it brings, because the
// rest of the object is the stored one's, shared with it.
func DefaultStatus(obj Object) {
	switch o := obj.(type) {
	case *Pod:
		// A new pod is Pending until an agent says otherwise, and its QoS
		// class is fixed by its (immutable) resources, as Kubernetes sets
		// both when a pod is created.
		if o.Status.Phase == "" {
			o.Status.Phase = PodPending
		}
		if o.Status.QOSClass == "" {
			o.Status.QOSClass = PodQOSClass(o)
		}
	case *Namespace:
		if o.Status.Phase == "" {
			o.Status.Phase = NamespaceActive
		}
	case *PersistentVolume:
		if o.Status.Phase == "" {
			o.Status.Phase = VolumePending
		}
	case *PersistentVolumeClaim:
		if o.Status.Phase == "" {
			o.Status.Phase = ClaimPending
		}
	}
}

// Defaults Kubernetes uses, named for the tests and the controllers.
const (
	DefaultTerminationGracePeriodSeconds int64 = 30
	DefaultProbeTimeoutSeconds           int32 = 1
	DefaultProbePeriodSeconds            int32 = 10
	DefaultProbeSuccessThreshold         int32 = 1
	DefaultProbeFailureThreshold         int32 = 3
	DefaultServiceAccountName                  = "default"
	DefaultRevisionHistoryLimit          int32 = 10
	DefaultProgressDeadlineSeconds       int32 = 600
	// DefaultMaxSurge and DefaultMaxUnavailable bound a rolling update.
	DefaultMaxSurge       = "25%"
	DefaultMaxUnavailable = "25%"
	// DefaultVolumeFileMode is the mode of files projected from ConfigMaps
	// and Secrets (0644).
	DefaultVolumeFileMode int32 = 0o644
)

func defaultNamespace(ns *Namespace) {
	if len(ns.Spec.Finalizers) == 0 {
		ns.Spec.Finalizers = []FinalizerName{FinalizerKubernetes}
	}
}

func defaultPodSpec(spec *PodSpec) {
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = DNSClusterFirst
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		v := DefaultTerminationGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &v
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = DefaultSchedulerName
	}
	// serviceAccount is the old name of serviceAccountName: read when the
	// new one is empty, and written back the same, as Kubernetes converts
	// them.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer(&spec.EphemeralContainers[i].Container)
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
}

// defaultPodOnly sets what Kubernetes defaults in a pod but not in a pod
// template: the service account, enableServiceLinks, and a host port for
// every container port of a pod on the host's network.
func defaultPodOnly(spec *PodSpec) {
	// A pod runs as the namespace's default service account unless it
	// names another, as Kubernetes' ServiceAccount admission sets it; a
	// template keeps what it says.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = DefaultServiceAccountName
		spec.DeprecatedServiceAccount = DefaultServiceAccountName
	}
	if spec.EnableServiceLinks == nil {
		t := true
		spec.EnableServiceLinks = &t
	}
	if spec.HostNetwork {
		for _, cs := range [][]Container{spec.InitContainers, spec.Containers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if p := &cs[i].Ports[j]; p.HostPort == 0 {
						p.HostPort = p.ContainerPort
					}
				}
			}
		}
	}
}

func defaultContainer(c *Container) {
	for i := range c.Ports {
		defaultProtocol(&c.Ports[i].Protocol)
	}
	for i := range c.Env {
		vf := c.Env[i].ValueFrom
		if vf == nil {
			continue
		}
		if vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
		if vf.FileKeyRef != nil && vf.FileKeyRef.Optional == nil {
			f := false
			vf.FileKeyRef.Optional = &f
		}
	}
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if l := c.Lifecycle; l != nil {
		defaultHTTPGet(l.PostStart)
		defaultHTTPGet(l.PreStop)
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = TerminationMessageReadFile
	}
}

// DefaultPullPolicy is the pull policy Kubernetes gives an image:
// Always for one tagged :latest or not tagged (and not pinned by digest),
// IfNotPresent otherwise.
func DefaultPullPolicy(image string) PullPolicy {
	ref, _, digest := strings.Cut(image, "@")
	tag := ""
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		tag = ref[i+1:]
	}
	if tag == "latest" || tag == "" && !digest {
		return PullAlways
	}
	return PullIfNotPresent
}

func defaultHTTPGet(h *LifecycleHandler) {
	if h == nil || h.HTTPGet == nil {
		return
	}
	if h.HTTPGet.Path == "" {
		h.HTTPGet.Path = "/"
	}
	if h.HTTPGet.Scheme == "" {
		h.HTTPGet.Scheme = URISchemeHTTP
	}
}

// defaultPodRequests gives a container with limits and no requests those
// limits as requests, as Kubernetes does for pods (not templates): the
// scheduler and eviction then see what the container may use.
func defaultPodRequests(spec *PodSpec) {
	for _, cs := range [][]Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, limit := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = ResourceList{}
				}
				r.Requests[name] = limit.DeepCopy()
			}
		}
	}
}

func defaultProbe(p *Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = DefaultProbeTimeoutSeconds
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = DefaultProbePeriodSeconds
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = DefaultProbeSuccessThreshold
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = DefaultProbeFailureThreshold
	}
	if g := p.GRPC; g != nil && g.Service == nil {
		e := ""
		g.Service = &e
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = URISchemeHTTP
		}
	}
}

func defaultProtocol(p *Protocol) {
	if *p == "" {
		*p = ProtocolTCP
	}
}

// defaultAffinityTimeout is ClientIP affinity's default timeout, three
// hours, as Kubernetes'.
const defaultAffinityTimeout = 10800

func defaultService(svc *Service) {
	spec := &svc.Spec
	if spec.Type == "" {
		spec.Type = ServiceTypeClusterIP
	}
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		if spec.SessionAffinityConfig == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}
		if spec.SessionAffinityConfig.ClientIP == nil {
			spec.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
		}
		if spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			t := int32(defaultAffinityTimeout)
			spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = &t
		}
	}
	if spec.Type != ServiceTypeExternalName && spec.InternalTrafficPolicy == nil {
		p := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &p
	}
	if (spec.Type == ServiceTypeNodePort || spec.Type == ServiceTypeLoadBalancer) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.Type == ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		t := true
		spec.AllocateLoadBalancerNodePorts = &t
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		defaultProtocol(&p.Protocol)
		if (p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal == 0) || (p.TargetPort.Type == intstr.String && p.TargetPort.StrVal == "") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

func defaultReplicas(r **int32) {
	if *r == nil {
		v := int32(1)
		*r = &v
	}
}

func defaultReplicationController(rc *ReplicationController) {
	defaultReplicas(&rc.Spec.Replicas)
	if rc.Spec.Template == nil {
		return
	}
	if labels := rc.Spec.Template.Labels; len(labels) > 0 {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = copyStringMap(labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = copyStringMap(labels)
		}
	}
	defaultPodSpec(&rc.Spec.Template.Spec)
}

func copyStringMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func defaultDeployment(d *Deployment) {
	defaultReplicas(&d.Spec.Replicas)
	s := &d.Spec.Strategy
	if s.Type == "" {
		s.Type = RollingUpdateDeploymentStrategyType
	}
	if s.Type == RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &RollingUpdateDeployment{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromString(DefaultMaxUnavailable)
			s.RollingUpdate.MaxUnavailable = &v
		}
		if s.RollingUpdate.MaxSurge == nil {
			v := intstr.FromString(DefaultMaxSurge)
			s.RollingUpdate.MaxSurge = &v
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		v := DefaultRevisionHistoryLimit
		d.Spec.RevisionHistoryLimit = &v
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		v := DefaultProgressDeadlineSeconds
		d.Spec.ProgressDeadlineSeconds = &v
	}
	defaultPodSpec(&d.Spec.Template.Spec)
}

func defaultStatefulSet(s *StatefulSet) {
	defaultReplicas(&s.Spec.Replicas)
	if s.Spec.PodManagementPolicy == "" {
		s.Spec.PodManagementPolicy = OrderedReadyPodManagement
	}
	u := &s.Spec.UpdateStrategy
	if u.Type == "" {
		u.Type = RollingUpdateStatefulSetStrategyType
	}
	if u.Type == RollingUpdateStatefulSetStrategyType {
		if u.RollingUpdate == nil {
			u.RollingUpdate = &RollingUpdateStatefulSetStrategy{}
		}
		if u.RollingUpdate.Partition == nil {
			u.RollingUpdate.Partition = new(int32)
		}
		if u.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromInt32(1)
			u.RollingUpdate.MaxUnavailable = &v
		}
	}
	if s.Spec.RevisionHistoryLimit == nil {
		v := DefaultRevisionHistoryLimit
		s.Spec.RevisionHistoryLimit = &v
	}
	if s.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	r := s.Spec.PersistentVolumeClaimRetentionPolicy
	if r.WhenDeleted == "" {
		r.WhenDeleted = RetainPersistentVolumeClaimRetentionPolicyType
	}
	if r.WhenScaled == "" {
		r.WhenScaled = RetainPersistentVolumeClaimRetentionPolicyType
	}
	for i := range s.Spec.VolumeClaimTemplates {
		c := &s.Spec.VolumeClaimTemplates[i]
		defaultVolumeMode(&c.Spec.VolumeMode)
		if c.Status.Phase == "" {
			c.Status.Phase = ClaimPending
		}
	}
	defaultPodSpec(&s.Spec.Template.Spec)
}

func defaultDaemonSet(d *DaemonSet) {
	u := &d.Spec.UpdateStrategy
	if u.Type == "" {
		u.Type = RollingUpdateDaemonSetStrategyType
	}
	if u.Type == RollingUpdateDaemonSetStrategyType {
		if u.RollingUpdate == nil {
			u.RollingUpdate = &RollingUpdateDaemonSet{}
		}
		if u.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromInt32(1)
			u.RollingUpdate.MaxUnavailable = &v
		}
		if u.RollingUpdate.MaxSurge == nil {
			v := intstr.FromInt32(0)
			u.RollingUpdate.MaxSurge = &v
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		v := DefaultRevisionHistoryLimit
		d.Spec.RevisionHistoryLimit = &v
	}
	defaultPodSpec(&d.Spec.Template.Spec)
}

func defaultVolumeMode(m **PersistentVolumeMode) {
	if *m == nil {
		v := PersistentVolumeFilesystem
		*m = &v
	}
}

func defaultPersistentVolume(pv *PersistentVolume) {
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = PersistentVolumeReclaimRetain
	}
	defaultVolumeMode(&pv.Spec.VolumeMode)
}

func defaultStorageClass(sc *StorageClass) {
	if sc.ReclaimPolicy == nil {
		v := PersistentVolumeReclaimDelete
		sc.ReclaimPolicy = &v
	}
	if sc.VolumeBindingMode == nil {
		v := VolumeBindingImmediate
		sc.VolumeBindingMode = &v
	}
}

// MergeStringData folds a Secret's write-only stringData into data, over
// data's value of the same key, as Kubernetes does on every write: every
// writer (the API, a source) stores the keys in data alone, where readers
// (kubectl's jsonpath, the agent) find them. Other objects are left as
// they are.
func MergeStringData(obj Object) {
	s, ok := obj.(*Secret)
	if !ok {
		return
	}
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// defaultEndpointSlicePorts gives each port of a slice a name (empty) and
// a protocol (TCP), as Kubernetes does, so that readers need not guess.
func defaultEndpointSlicePorts(ports []EndpointSlicePort) {
	for i := range ports {
		p := &ports[i]
		if p.Name == nil {
			p.Name = new(string)
		}
		if p.Protocol == nil {
			tcp := ProtocolTCP
			p.Protocol = &tcp
		}
	}
}

package fuzzer

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The defaults Kubernetes' API server gives a pod (k8s.io/kubernetes'
// pkg/apis/core/v1 SetDefaults_* and the +default markers of
// k8s.io/api, with the PodSpec conversion that keeps serviceAccount and
// serviceAccountName the same), written again here on Kubernetes' own
// types so that berth's defaulting, on its own types, is checked against
// an account of them that is not its own. The ServiceAccount admission
// plugin's "default" account is among them for a pod, not for a
// template.

// DefaultPod defaults a pod as Kubernetes does when it is created.
func DefaultPod(p *corev1.Pod) {
	DefaultPodSpec(&p.Spec)
	s := &p.Spec
	if s.ServiceAccountName == "" {
		s.ServiceAccountName, s.DeprecatedServiceAccount = "default", "default"
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, limit := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[name] = limit.DeepCopy()
				}
			}
			if s.HostNetwork {
				for j := range cs[i].Ports {
					if port := &cs[i].Ports[j]; port.HostPort == 0 {
						port.HostPort = port.ContainerPort
					}
				}
			}
		}
	}
	if s.EnableServiceLinks == nil {
		t := true
		s.EnableServiceLinks = &t
	}
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodPending
	}
}

// DefaultPodSpec defaults a pod spec, of a pod or a template.
func DefaultPodSpec(s *corev1.PodSpec) {
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := int64(corev1.DefaultTerminationGracePeriodSeconds)
		s.TerminationGracePeriodSeconds = &g
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		c := corev1.Container(s.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(&c)
		s.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
	roundUp(s.Overhead)
	if s.Resources != nil {
		roundUp(s.Resources.Limits)
		roundUp(s.Resources.Requests)
	}
}

// roundUp rounds quantities up to milli units, as SetDefaults_ResourceList.
func roundUp(rl corev1.ResourceList) {
	for k, v := range rl {
		v.RoundUp(resource.Milli)
		rl[k] = v
	}
}

func pullPolicy(image string) corev1.PullPolicy {
	ref, _, digest := strings.Cut(image, "@")
	tag := ""
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		tag = ref[i+1:]
	}
	if tag == "latest" || tag == "" && !digest {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil {
			if vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
				vf.FieldRef.APIVersion = "v1"
			}
			if vf.FileKeyRef != nil && vf.FileKeyRef.Optional == nil {
				f := false
				vf.FileKeyRef.Optional = &f
			}
		}
	}
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		for _, f := range []struct {
			v *int32
			d int32
		}{{&p.TimeoutSeconds, 1}, {&p.PeriodSeconds, 10}, {&p.SuccessThreshold, 1}, {&p.FailureThreshold, 3}} {
			if *f.v == 0 {
				*f.v = f.d
			}
		}
		defaultHTTPGet(p.HTTPGet)
		if g := p.GRPC; g != nil && g.Service == nil {
			e := ""
			g.Service = &e
		}
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultMode(m **int32) {
	if *m == nil {
		d := int32(0o644)
		*m = &d
	}
}

func defaultString(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

func defaultFieldRefs(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if f := items[i].FieldRef; f != nil && f.APIVersion == "" {
			f.APIVersion = "v1"
		}
	}
}

func defaultVolume(v *corev1.Volume) {
	s := &v.VolumeSource
	if *s == (corev1.VolumeSource{}) {
		s.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if s.HostPath != nil && s.HostPath.Type == nil {
		t := corev1.HostPathUnset
		s.HostPath.Type = &t
	}
	if s.Secret != nil {
		defaultMode(&s.Secret.DefaultMode)
	}
	if s.ConfigMap != nil {
		defaultMode(&s.ConfigMap.DefaultMode)
	}
	if d := s.DownwardAPI; d != nil {
		defaultMode(&d.DefaultMode)
		defaultFieldRefs(d.Items)
	}
	if p := s.Projected; p != nil {
		defaultMode(&p.DefaultMode)
		for i := range p.Sources {
			if d := p.Sources[i].DownwardAPI; d != nil {
				defaultFieldRefs(d.Items)
			}
			if t := p.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				h := int64(3600)
				t.ExpirationSeconds = &h
			}
		}
	}
	if r := s.RBD; r != nil {
		defaultString(&r.RBDPool, "rbd")
		defaultString(&r.RadosUser, "admin")
		defaultString(&r.Keyring, "/etc/ceph/keyring")
	}
	if i := s.ISCSI; i != nil {
		defaultString(&i.ISCSIInterface, "default")
	}
	if a := s.AzureDisk; a != nil {
		if a.CachingMode == nil {
			m := corev1.AzureDataDiskCachingReadWrite
			a.CachingMode = &m
		}
		if a.FSType == nil {
			t := "ext4"
			a.FSType = &t
		}
		if a.ReadOnly == nil {
			f := false
			a.ReadOnly = &f
		}
		if a.Kind == nil {
			k := corev1.AzureSharedBlobDisk
			a.Kind = &k
		}
	}
	if sc := s.ScaleIO; sc != nil {
		defaultString(&sc.StorageMode, "ThinProvisioned")
		defaultString(&sc.FSType, "xfs")
	}
	if i := s.Image; i != nil && i.PullPolicy == "" {
		i.PullPolicy = pullPolicy(i.Reference)
	}
	if e := s.Ephemeral; e != nil && e.VolumeClaimTemplate != nil && e.VolumeClaimTemplate.Spec.VolumeMode == nil {
		m := corev1.PersistentVolumeFilesystem
		e.VolumeClaimTemplate.Spec.VolumeMode = &m
	}
}

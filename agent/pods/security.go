package pods

import (
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// runAsGroup is the group a container of pod runs as (its own
// securityContext's, else the pod's), nil for the agent's own.
func runAsGroup(pod *api.Pod, c *api.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsGroup != nil {
		return c.SecurityContext.RunAsGroup
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.RunAsGroup
	}
	return nil
}

// containerSecurity is c's effective securityContext beyond its user and
// group, as the kubelet determines it: each field of the container's own
// overrides the pod's; the pod's fsGroup and supplementalGroups are the
// container's supplementary groups. Nil when nothing is set.
func containerSecurity(pod *api.Pod, c *api.Container) *runtime.Security {
	ps, cs := pod.Spec.SecurityContext, c.SecurityContext
	if ps == nil && cs == nil {
		return nil
	}
	s := &runtime.Security{}
	if ps != nil {
		if ps.RunAsNonRoot != nil {
			s.RunAsNonRoot = *ps.RunAsNonRoot
		}
		if ps.FSGroup != nil {
			s.SupplementalGroups = append(s.SupplementalGroups, *ps.FSGroup)
		}
		s.SupplementalGroups = append(s.SupplementalGroups, ps.SupplementalGroups...)
		if ps.SeccompProfile != nil {
			s.Seccomp = string(ps.SeccompProfile.Type)
		}
	}
	if cs != nil {
		if cs.RunAsNonRoot != nil {
			s.RunAsNonRoot = *cs.RunAsNonRoot
		}
		if cs.SeccompProfile != nil {
			s.Seccomp = string(cs.SeccompProfile.Type)
		}
		s.Privileged = cs.Privileged != nil && *cs.Privileged
		s.ReadOnlyRootfs = cs.ReadOnlyRootFilesystem != nil && *cs.ReadOnlyRootFilesystem
		s.NoNewPrivs = cs.AllowPrivilegeEscalation != nil && !*cs.AllowPrivilegeEscalation
		if caps := cs.Capabilities; caps != nil {
			for _, c := range caps.Add {
				s.CapAdd = append(s.CapAdd, string(c))
			}
			for _, c := range caps.Drop {
				s.CapDrop = append(s.CapDrop, string(c))
			}
		}
	}
	return s
}

// podPrivileged says whether a container of pod is privileged, which its
// sandbox must then allow.
func podPrivileged(pod *api.Pod) bool {
	for _, c := range allContainers(pod) {
		if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			return true
		}
	}
	return false
}

// podSeccomp is the pod's own seccompProfile type, its sandbox's.
func podSeccomp(pod *api.Pod) string {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		return string(sc.SeccompProfile.Type)
	}
	return ""
}

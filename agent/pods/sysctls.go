package pods

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/component-helpers/node/util/sysctl"

	"github.com/berth-dev/berth/api"
)

// ReasonSysctlForbidden is the reason of a pod refused for a sysctl the
// node does not allow, the kubelet's.
const ReasonSysctlForbidden = "SysctlForbidden"

// SafeSysctls are the sysctls the kubelet allows every pod (its safe
// set): namespaced, so that setting one in a pod's sandbox touches
// neither the node nor other pods.
var SafeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// sysctlPattern is what --allowed-unsafe-sysctls takes, the kubelet's: a
// sysctl, dotted or with slashes, its last segment maybe ending in *.
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

// sysctlMaxLength is the longest sysctl name Kubernetes takes.
const sysctlMaxLength = 253

// sysctlAllowlist is the sysctls a node lets pods set, each with the
// kernel namespace that holds it: names, and prefixes from patterns that
// end in *.
type sysctlAllowlist struct {
	names, prefixes map[string]sysctl.Namespace
}

// newSysctlAllowlist allows the safe sysctls and the unsafe ones named
// by patterns (--allowed-unsafe-sysctls), refusing a pattern that is not
// a sysctl or names one no namespace of a pod holds, as the kubelet: such
// a sysctl would be set for the whole node.
func newSysctlAllowlist(unsafe []string) (*sysctlAllowlist, error) {
	w := &sysctlAllowlist{names: map[string]sysctl.Namespace{}, prefixes: map[string]sysctl.Namespace{}}
	for _, p := range append(append([]string(nil), SafeSysctls...), unsafe...) {
		if len(p) > sysctlMaxLength || !sysctlPattern.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", p, sysctlMaxLength, sysctlPattern)
		}
		ns, name, prefixed := sysctl.GetNamespace(p)
		if ns == sysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", name)
		}
		if prefixed {
			w.prefixes[name] = ns
		} else {
			w.names[name] = ns
		}
	}
	return w, nil
}

// forbidden is why the kubelet would refuse pod for its sysctls, or
// empty: a sysctl not on the list, or one of the network's (the IPC's)
// in a pod of the node's network (IPC namespace), which would set it for
// the node.
func (w *sysctlAllowlist) forbidden(pod *api.Pod) string {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return ""
	}
	for _, s := range sc.Sysctls {
		if err := w.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != "" {
			return "forbidden sysctl: " + err
		}
	}
	return ""
}

func (w *sysctlAllowlist) check(name string, hostNet, hostIPC bool) string {
	name = sysctl.NormalizeName(name)
	ns, ok := w.names[name]
	if !ok {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(name, p) {
				ns, ok = pns, true
				break
			}
		}
	}
	switch {
	case !ok:
		return fmt.Sprintf("%q not allowlisted", name)
	case ns == sysctl.NetNamespace && hostNet, ns == sysctl.IPCNamespace && hostIPC:
		return fmt.Sprintf("%q not allowed with host %s enabled", name, ns)
	}
	return ""
}

// podSysctls are the pod's sysctls by dotted name, for its sandbox.
func podSysctls(pod *api.Pod) map[string]string {
	sc := pod.Spec.SecurityContext
	if sc == nil || len(sc.Sysctls) == 0 {
		return nil
	}
	out := make(map[string]string, len(sc.Sysctls))
	for _, s := range sc.Sysctls {
		out[sysctl.NormalizeName(s.Name)] = s.Value
	}
	return out
}

// CheckAllowedUnsafeSysctls says what is wrong with a list of
// --allowed-unsafe-sysctls, or nil.
func CheckAllowedUnsafeSysctls(patterns []string) error {
	_, err := newSysctlAllowlist(patterns)
	return err
}

package agent

import (
	"fmt"
	"strings"

	"github.com/berth-dev/berth/api"
)

// ReasonSysctlForbidden is the reason of a pod refused for a sysctl the
// node does not allow, the kubelet's.
const ReasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are the sysctls the kubelet allows every pod by default
// (its safe set), by the namespace each belongs to: namespaced, so that
// setting one in a pod's sandbox touches neither the node nor other pods.
var safeSysctls = map[string]string{
	"kernel.shm_rmid_forced":              "ipc",
	"net.ipv4.ip_local_port_range":        "net",
	"net.ipv4.tcp_syncookies":             "net",
	"net.ipv4.ping_group_range":           "net",
	"net.ipv4.ip_unprivileged_port_start": "net",
	"net.ipv4.ip_local_reserved_ports":    "net",
	"net.ipv4.tcp_keepalive_time":         "net",
	"net.ipv4.tcp_fin_timeout":            "net",
	"net.ipv4.tcp_keepalive_intvl":        "net",
	"net.ipv4.tcp_keepalive_probes":       "net",
	"net.ipv4.tcp_rmem":                   "net",
	"net.ipv4.tcp_wmem":                   "net",
}

// normalizeSysctl turns a sysctl written with slashes (net/ipv4/...)
// into its dotted name, as the kubelet reads either.
func normalizeSysctl(name string) string {
	if i := strings.IndexAny(name, "./"); i >= 0 && name[i] == '/' {
		return strings.Map(func(r rune) rune {
			switch r {
			case '/':
				return '.'
			case '.':
				return '/'
			}
			return r
		}, name)
	}
	return name
}

// forbiddenSysctl is why the kubelet would refuse pod for its sysctls,
// or empty: a sysctl outside the safe set, or one of the network's (the
// IPC's) in a pod of the node's network (IPC namespace), which would set
// it for the node.
func forbiddenSysctl(pod *api.Pod) string {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return ""
	}
	for _, s := range sc.Sysctls {
		name := normalizeSysctl(s.Name)
		ns, ok := safeSysctls[name]
		switch {
		case !ok:
			return fmt.Sprintf("forbidden sysctl: %q not allowlisted", name)
		case ns == "net" && pod.Spec.HostNetwork, ns == "ipc" && pod.Spec.HostIPC:
			return fmt.Sprintf("forbidden sysctl: %q not allowed with host %s enabled", name, ns)
		}
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
		out[normalizeSysctl(s.Name)] = s.Value
	}
	return out
}

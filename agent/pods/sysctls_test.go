package pods

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/api"
)

// TestForbiddenSysctl refuses, as the kubelet, sysctls outside its safe
// set and the node's --allowed-unsafe-sysctls, and namespaced ones a pod
// of the node's namespaces would set for the node; both spellings of a
// name are read.
func TestForbiddenSysctl(t *testing.T) {
	pod := func(hostNet, hostIPC bool, sysctls ...corev1.Sysctl) *api.Pod {
		return &api.Pod{Spec: api.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC,
			SecurityContext: &api.PodSecurityContext{Sysctls: sysctls}}}
	}
	sc := func(name string) corev1.Sysctl { return corev1.Sysctl{Name: name, Value: "1"} }
	for _, c := range []struct {
		name   string
		unsafe []string
		pod    *api.Pod
		want   string
	}{
		{"none", nil, &api.Pod{}, ""},
		{"safe", nil, pod(false, false, corev1.Sysctl{Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"}, sc("kernel.shm_rmid_forced")), ""},
		{"safe, with slashes", nil, pod(false, false, sc("net/ipv4/tcp_syncookies")), ""},
		{"unsafe", nil, pod(false, false, sc("kernel.msgmax")), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"net on the host network", nil, pod(true, false, sc("net.ipv4.tcp_syncookies")), `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{"ipc on the host network", nil, pod(true, false, sc("kernel.shm_rmid_forced")), ""},
		{"ipc on the host IPC", nil, pod(false, true, sc("kernel.shm_rmid_forced")), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"unsafe, allowed by name", []string{"kernel.msgmax"}, pod(false, false, sc("kernel.msgmax")), ""},
		{"unsafe, allowed by name with slashes", []string{"kernel/msgmax"}, pod(false, false, sc("kernel.msgmax")), ""},
		{"unsafe, another name", []string{"kernel.msgmax"}, pod(false, false, sc("kernel.msgmnb")), `forbidden sysctl: "kernel.msgmnb" not allowlisted`},
		{"unsafe, allowed by pattern", []string{"kernel.msg*", "net.core.*"}, pod(false, false, sc("kernel.msgmnb"), sc("net.core.somaxconn")), ""},
		{"unsafe, outside the pattern", []string{"net.core.*"}, pod(false, false, sc("net.ipv4.conf.all.forwarding")), `forbidden sysctl: "net.ipv4.conf.all.forwarding" not allowlisted`},
		{"unsafe net pattern on the host network", []string{"net.core.*"}, pod(true, false, sc("net/core/somaxconn")), `forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`},
		{"unsafe ipc on the host IPC", []string{"fs.mqueue.*"}, pod(false, true, sc("fs.mqueue.msg_max")), `forbidden sysctl: "fs.mqueue.msg_max" not allowed with host IPC enabled`},
		{"the first forbidden one", []string{"kernel.sem"}, pod(false, false, sc("kernel.sem"), sc("vm.swappiness"), sc("kernel.msgmax")), `forbidden sysctl: "vm.swappiness" not allowlisted`},
	} {
		w, err := newSysctlAllowlist(c.unsafe)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := w.forbidden(c.pod); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	got := podSysctls(pod(false, false, corev1.Sysctl{Name: "net/ipv4/tcp_syncookies", Value: "1"}, corev1.Sysctl{Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"}))
	if want := map[string]string{"net.ipv4.tcp_syncookies": "1", "net.ipv4.ip_local_port_range": "1024 65000"}; !maps.Equal(got, want) {
		t.Errorf("podSysctls: %v, want %v", got, want)
	}
}

// TestAllowedUnsafeSysctlsRefused refuses, as the kubelet does at start,
// a pattern that is not a sysctl or names one no pod namespace holds.
func TestAllowedUnsafeSysctlsRefused(t *testing.T) {
	for _, c := range []struct {
		patterns []string
		want     string
	}{
		{[]string{"vm.swappiness"}, `the sysctls "vm.swappiness" are not known to be namespaced`},
		{[]string{"kernel.*"}, `the sysctls "kernel." are not known to be namespaced`},
		{[]string{"*"}, `the sysctls "" are not known to be namespaced`},
		{[]string{"net.core.*", "Net.Core"}, `sysctl "Net.Core" must have at most 253 characters and match regex`},
		{[]string{"net..core"}, `sysctl "net..core" must have`},
		{[]string{"net.*.x"}, `sysctl "net.*.x" must have`},
		{[]string{""}, `sysctl "" must have`},
		{[]string{"net." + strings.Repeat("a", 250)}, `must have at most 253 characters`},
	} {
		err := CheckAllowedUnsafeSysctls(c.patterns)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.patterns, err, c.want)
		}
	}
	for _, ok := range [][]string{nil, {"kernel.msg*", "kernel.sem", "fs.mqueue.*", "net.*", "net/ipv4/conf/all/forwarding", "kernel.shm*"}} {
		if err := CheckAllowedUnsafeSysctls(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

package agent

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/api"
)

// TestForbiddenSysctl refuses, as the kubelet, sysctls outside its safe
// set and namespaced ones a pod of the node's namespaces would set for
// the node; both spellings of a name are read.
func TestForbiddenSysctl(t *testing.T) {
	pod := func(hostNet, hostIPC bool, sysctls ...corev1.Sysctl) *api.Pod {
		return &api.Pod{Spec: api.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC,
			SecurityContext: &api.PodSecurityContext{Sysctls: sysctls}}}
	}
	for _, c := range []struct {
		name string
		pod  *api.Pod
		want string
	}{
		{"none", &api.Pod{}, ""},
		{"safe", pod(false, false, corev1.Sysctl{Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"}, corev1.Sysctl{Name: "kernel.shm_rmid_forced", Value: "1"}), ""},
		{"safe, with slashes", pod(false, false, corev1.Sysctl{Name: "net/ipv4/tcp_syncookies", Value: "1"}), ""},
		{"unsafe", pod(false, false, corev1.Sysctl{Name: "kernel.msgmax", Value: "1"}), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"net on the host network", pod(true, false, corev1.Sysctl{Name: "net.ipv4.tcp_syncookies", Value: "1"}), `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled`},
		{"ipc on the host network", pod(true, false, corev1.Sysctl{Name: "kernel.shm_rmid_forced", Value: "1"}), ""},
		{"ipc on the host IPC", pod(false, true, corev1.Sysctl{Name: "kernel.shm_rmid_forced", Value: "1"}), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled`},
	} {
		if got := forbiddenSysctl(c.pod); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	got := podSysctls(pod(false, false, corev1.Sysctl{Name: "net/ipv4/tcp_syncookies", Value: "1"}, corev1.Sysctl{Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"}))
	if want := map[string]string{"net.ipv4.tcp_syncookies": "1", "net.ipv4.ip_local_port_range": "1024 65000"}; !maps.Equal(got, want) {
		t.Errorf("podSysctls: %v, want %v", got, want)
	}
}

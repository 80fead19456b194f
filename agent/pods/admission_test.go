package pods

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

func TestUnsupportedFields(t *testing.T) {
	yes := true
	pod := func(change func(*api.Pod)) *api.Pod {
		p := &api.Pod{Spec: api.PodSpec{Containers: []api.Container{{Name: "a", Image: "x"}}}}
		api.Default(p)
		change(p)
		return p
	}
	for _, tt := range []struct {
		name string
		pod  *api.Pod
		has  []runtime.Feature
		want []string
	}{
		{"plain pod", pod(func(*api.Pod) {}), nil, nil},
		{"host network on exec", pod(func(p *api.Pod) { p.Spec.HostNetwork = true }), runtime.ExecFeatures, nil},
		{"host network without", pod(func(p *api.Pod) { p.Spec.HostNetwork = true }), nil, []string{"spec.hostNetwork"}},
		{"projected and downwardAPI volumes", pod(func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "v", VolumeSource: api.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{}}, {ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}},
				{Name: "d", VolumeSource: api.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "n", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}, {Path: "c", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}}}}},
				{Name: "e", VolumeSource: api.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
		}), runtime.ExecFeatures, []string{"spec.volumes[2].ephemeral"}},
		{"postStart and read-only root", pod(func(p *api.Pod) {
			c := &p.Spec.Containers[0]
			c.Lifecycle = &api.Lifecycle{PostStart: &api.LifecycleHandler{Exec: &api.ExecAction{Command: []string{"true"}}}}
			c.SecurityContext = &api.SecurityContext{ReadOnlyRootFilesystem: &yes}
		}), runtime.ExecFeatures, []string{"spec.containers[0].securityContext.readOnlyRootFilesystem", "spec.containers[0].lifecycle.postStart"}},
		{"pod runAsUser and runAsGroup everywhere", pod(func(p *api.Pod) {
			p.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: new(int64(1000)), RunAsGroup: new(int64(1000))}
		}), runtime.ExecFeatures, nil},
		{"runAsNonRoot and RuntimeDefault on exec", pod(func(p *api.Pod) {
			p.Spec.SecurityContext = &api.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		}), runtime.ExecFeatures, []string{"spec.securityContext.seccompProfile", "spec.securityContext.runAsNonRoot"}},
		{"runAsNonRoot and RuntimeDefault where honoured", pod(func(p *api.Pod) {
			p.Spec.SecurityContext = &api.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			p.Spec.Containers[0].SecurityContext = &api.SecurityContext{RunAsNonRoot: &yes, Privileged: &yes}
		}), []runtime.Feature{runtime.FeatureRunAsNonRoot, runtime.FeatureSeccomp, runtime.FeaturePrivileged}, nil},
		{"a Localhost seccomp profile nowhere", pod(func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext = &api.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
		}), []runtime.Feature{runtime.FeatureSeccomp}, []string{"spec.containers[0].securityContext.seccompProfile"}},
		{"hostAliases and sysctls on exec", pod(func(p *api.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "198.18.9.9", Hostnames: []string{"foo"}}}
			p.Spec.SecurityContext = &api.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}}}
		}), runtime.ExecFeatures, []string{"spec.hostAliases", "spec.securityContext.sysctls"}},
		{"hostAliases and sysctls where honoured", pod(func(p *api.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "198.18.9.9", Hostnames: []string{"foo"}}}
			p.Spec.SecurityContext = &api.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}}}
		}), []runtime.Feature{runtime.FeatureHostAliases, runtime.FeatureSysctls}, nil},
		{"postStart where honoured", pod(func(p *api.Pod) {
			p.Spec.Containers[0].Lifecycle = &api.Lifecycle{PostStart: &api.LifecycleHandler{Exec: &api.ExecAction{Command: []string{"true"}}}}
		}), []runtime.Feature{runtime.FeaturePostStart}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := unsupported(tt.pod, tt.has); !slices.Equal(got, tt.want) {
				t.Errorf("unsupported: %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRefusedPod: a pod the runtime cannot honour is Failed with the
// reason and the fields, an event says so, and nothing of it runs.
func TestRefusedPod(t *testing.T) {
	h, ev := newEventHarness(t)
	pod := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []api.Volume{{Name: "info", VolumeSource: api.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
	h.m.Sync(pod)
	const msg = "Pod was rejected: node n1 (runtime exec) cannot honour spec.volumes[0].ephemeral (see docs/runtimes.md)"
	h.waitStatus("u1", "refused", func(st api.PodStatus) error {
		if st.Phase != api.PodFailed || st.Reason != ReasonUnsupported || st.Message != msg {
			return fmt.Errorf("phase %s, reason %q, message %q", st.Phase, st.Reason, st.Message)
		}
		return nil
	})
	ev.waitEvents(t, "Warning "+ReasonUnsupported+" "+msg)
	h.settle()
	if _, ok := h.rt.run(rid("u1", "app", 0)); ok {
		t.Error("a container of the refused pod runs")
	}
}

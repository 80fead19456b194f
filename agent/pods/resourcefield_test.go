package pods

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// TestResourceFieldValue reads requests and limits as the kubelet does:
// divided by the divisor and rounded up, cpu in millicores, a limit the
// container does not set read from the node's allocatable.
func TestResourceFieldValue(t *testing.T) {
	q := resource.MustParse
	c := &api.Container{Name: "app", Resources: api.ResourceRequirements{
		Requests: api.ResourceList{api.ResourceCPU: q("250m"), api.ResourceMemory: q("64Mi")},
		Limits:   api.ResourceList{api.ResourceCPU: q("1500m"), api.ResourceMemory: q("100M"), "hugepages-2Mi": q("4Mi")},
	}}
	bare := &api.Container{Name: "bare"}
	alloc := api.ResourceList{api.ResourceCPU: q("3900m"), api.ResourceMemory: q("7Gi"), api.ResourceEphemeralStorage: q("50Gi"), "hugepages-2Mi": q("1Gi")}
	for _, tt := range []struct {
		c        *api.Container
		resource string
		divisor  string
		want     string
	}{
		{c, "requests.cpu", "", "1"},
		{c, "requests.cpu", "1m", "250"},
		{c, "limits.cpu", "", "2"},
		{c, "limits.cpu", "1m", "1500"},
		{c, "requests.memory", "", "67108864"},
		{c, "requests.memory", "1Mi", "64"},
		{c, "limits.memory", "1Mi", "96"},
		{c, "limits.memory", "1M", "100"},
		{c, "limits.memory", "1Gi", "1"},
		{c, "limits.hugepages-2Mi", "1Mi", "4"},
		{c, "requests.ephemeral-storage", "", "0"},
		{c, "limits.ephemeral-storage", "1Gi", "50"},
		{bare, "limits.cpu", "1m", "3900"},
		{bare, "limits.cpu", "", "4"},
		{bare, "limits.memory", "1Mi", "7168"},
		{bare, "requests.cpu", "", "0"},
		{bare, "requests.memory", "", "0"},
		{bare, "limits.hugepages-2Mi", "", "0"},
	} {
		fs := &corev1.ResourceFieldSelector{Resource: tt.resource}
		if tt.divisor != "" {
			fs.Divisor = q(tt.divisor)
		}
		got, err := resourceFieldValue(fs, tt.c, alloc)
		if err != nil || got != tt.want {
			t.Errorf("%s %s / %q: %q, %v, want %q", tt.c.Name, tt.resource, tt.divisor, got, err, tt.want)
		}
	}
	for _, r := range []string{"limits.pods", "cpu", "requests.nvidia.com/gpu", "usage.cpu"} {
		if got, err := resourceFieldValue(&corev1.ResourceFieldSelector{Resource: r}, c, alloc); err == nil {
			t.Errorf("%s: %q, want an error", r, got)
		}
	}
}

// TestResourceFieldRefEnvAndVolume gives a container its own limits and
// another container's in env (valueFrom.resourceFieldRef, with and without
// containerName) and writes them into downwardAPI and projected volumes;
// a container name the pod lacks is a config error naming it.
func TestResourceFieldRefEnvAndVolume(t *testing.T) {
	q := resource.MustParse
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-resources"},
		Spec: api.PodSpec{
			InitContainers: []api.Container{{Name: "init", Resources: api.ResourceRequirements{Limits: api.ResourceList{api.ResourceMemory: q("32Mi")}}}},
			Containers: []api.Container{
				{Name: "app", Resources: api.ResourceRequirements{Limits: api.ResourceList{api.ResourceCPU: q("500m"), api.ResourceMemory: q("128Mi")}},
					Env: []api.EnvVar{
						{Name: "CPU_MILLIS", ValueFrom: &api.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: q("1m")}}},
						{Name: "MEM", ValueFrom: &api.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: q("1Mi")}}},
						{Name: "SIDE_CPU", ValueFrom: &api.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "side", Resource: "limits.cpu"}}},
					}},
				{Name: "side"},
			},
			Volumes: []api.Volume{
				{Name: "res", VolumeSource: api.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "app_mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: q("1Mi")}},
					{Path: "side_mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "side", Resource: "limits.memory"}},
				}}}},
				{Name: "all", VolumeSource: api.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "init_mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "init", Resource: "limits.memory", Divisor: q("1Mi")}}}}},
				}}}},
			},
		},
	}
	api.Default(pod)
	alloc := api.ResourceList{api.ResourceCPU: q("2"), api.ResourceMemory: q("1Gi")}
	env, _, err := containerEnv(context.Background(), envSource{pod: pod, allocatable: alloc, images: true}, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CPU_MILLIS=500", "MEM=128", "SIDE_CPU=2"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %q", want, env)
		}
	}
	dataDir := t.TempDir()
	paths, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, allocatable: alloc}, pod)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(paths["res"], "app_mem"):  "128",
		filepath.Join(paths["res"], "side_mem"): "1073741824",
		filepath.Join(paths["all"], "init_mem"): "32",
	} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v, want %q", path, b, err, want)
		}
	}

	pod.Spec.Containers[0].Env[2].ValueFrom.ResourceFieldRef.ContainerName = "gone"
	_, _, err = containerEnv(context.Background(), envSource{pod: pod, allocatable: alloc, images: true}, &pod.Spec.Containers[0])
	var ce *configError
	if err == nil || !errors.As(err, &ce) || err.Error() != "env SIDE_CPU: container gone not found" {
		t.Errorf("a container the pod lacks: %v, want a config error", err)
	}
}

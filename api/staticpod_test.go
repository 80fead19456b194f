package api_test

import (
	"slices"
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestStaticPodReferences(t *testing.T) {
	ref := api.LocalObjectReference{Name: "x"}
	spec := api.PodSpec{
		ServiceAccountName: "builder",
		Volumes: []api.Volume{
			{Name: "tmp", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}},
			{Name: "s", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "sec"}}},
			{Name: "c", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: ref}}},
			{Name: "p", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		},
		InitContainers: []api.Container{{Name: "i", EnvFrom: []api.EnvFromSource{
			{SecretRef: &api.SecretEnvSource{LocalObjectReference: ref}},
			{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: ref}},
		}}},
		Containers: []api.Container{{Name: "c", Env: []api.EnvVar{
			{Name: "PLAIN", Value: "v"},
			{Name: "FIELD", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "S", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: ref, Key: "k"}}},
			{Name: "C", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: &api.ConfigMapKeySelector{LocalObjectReference: ref, Key: "k"}}},
		}}},
	}
	want := []string{
		`spec.serviceAccountName: ServiceAccount "builder"`,
		`spec.volumes[1].secret: Secret "sec"`,
		`spec.volumes[2].configMap: ConfigMap "x"`,
		`spec.volumes[3].persistentVolumeClaim: PersistentVolumeClaim "data"`,
		`spec.initContainers[0].envFrom[0].secretRef: Secret "x"`,
		`spec.initContainers[0].envFrom[1].configMapRef: ConfigMap "x"`,
		`spec.containers[0].env[2].valueFrom.secretKeyRef: Secret "x"`,
		`spec.containers[0].env[3].valueFrom.configMapKeyRef: ConfigMap "x"`,
	}
	if got := api.StaticPodReferences(&spec); !slices.Equal(got, want) {
		t.Errorf("StaticPodReferences =\n%q\nwant\n%q", got, want)
	}
	for _, sa := range []string{"", api.DefaultServiceAccountName} {
		plain := api.PodSpec{ServiceAccountName: sa, Containers: []api.Container{{Name: "c", Image: "i"}}}
		if got := api.StaticPodReferences(&plain); len(got) != 0 {
			t.Errorf("service account %q: StaticPodReferences = %q, want none", sa, got)
		}
	}
}

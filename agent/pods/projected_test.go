package pods

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// TestDownwardAndProjectedVolumes writes a downwardAPI volume (the pod's
// name, labels as the kubelet formats them, one annotation) and a
// projected volume gathering a ConfigMap's items, a Secret's keys and a
// downwardAPI item, with their modes; an optional ConfigMap that is
// missing adds nothing, and a change of the pod's labels is written at
// the next sync.
func TestDownwardAndProjectedVolumes(t *testing.T) {
	refs := &fakeRefs{
		configMaps: map[string]*api.ConfigMap{"default/conf": {Data: map[string]string{"a": "1", "b": "2"}}},
		secrets:    map[string]*api.Secret{"default/creds": {Data: map[string][]byte{"pw": []byte("s")}}},
	}
	yes := true
	mode := int32(0o600)
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-downward",
			Labels: map[string]string{"tier": "web", "app": "shop"}, Annotations: map[string]string{"build": "42"}},
		Spec: api.PodSpec{Volumes: []api.Volume{
			{Name: "info", VolumeSource: api.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "meta/labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "build", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['build']"}, Mode: &mode},
			}}}},
			{Name: "all", VolumeSource: api.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, Items: []corev1.KeyToPath{{Key: "b", Path: "conf/b"}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: &yes}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}}},
		}},
	}
	api.Default(pod)
	dataDir := t.TempDir()
	paths, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, refs: refs}, pod)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(paths["info"], "name"):        "p",
		filepath.Join(paths["info"], "meta/labels"): "app=\"shop\"\ntier=\"web\"",
		filepath.Join(paths["info"], "build"):       "42",
		filepath.Join(paths["all"], "conf/b"):       "2",
		filepath.Join(paths["all"], "pw"):           "s",
		filepath.Join(paths["all"], "ns"):           "default",
	} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v, want %q", path, b, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(paths["info"], "build")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("build's mode: %v, %v, want 0600", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(paths["info"], "name")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("name's mode: %v, %v, want the default 0644", fi, err)
	}
	if _, err := os.Stat(filepath.Join(paths["all"], "a")); err == nil {
		t.Errorf("the ConfigMap's key a, not among its items, was projected")
	}

	pod.Labels["tier"] = "db"
	if _, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, refs: refs}, pod); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(paths["info"], "meta/labels")); string(b) != "app=\"shop\"\ntier=\"db\"" {
		t.Errorf("labels after the change: %q", b)
	}
}

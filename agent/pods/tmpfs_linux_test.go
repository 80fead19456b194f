package pods

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

func TestEmptyDirInMemory(t *testing.T) {
	dataDir := t.TempDir()
	size := resource.MustParse("8Mi")
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "u-mem"}}
	pod.Spec.Volumes = []api.Volume{{Name: "scratch", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{Medium: api.StorageMediumMemory, SizeLimit: &size}}}}
	paths, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir}, pod)
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["scratch"]
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("volume dir %s: %v", dir, err)
	}
	mounted, err := isMountPoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !mounted {
		t.Skip("this process may not mount (no CAP_SYS_ADMIN): the volume is a plain directory, as designed")
	}
	t.Cleanup(func() { unmountUnder(filepath.Dir(dir)) })
	// Set up again (an agent restart): the mount is found, not stacked.
	if _, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir}, pod); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 16<<20), 0o644); err == nil {
		t.Error("wrote 16 MiB into an 8 MiB tmpfs")
	}
	if err := unmountUnder(filepath.Dir(dir)); err != nil {
		t.Fatal(err)
	}
	if mounted, _ := isMountPoint(dir); mounted {
		t.Error("still mounted after unmountUnder")
	}
}

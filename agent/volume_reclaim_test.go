package agent

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

func localVolume(name, node, dir string, provisioned bool) *api.PersistentVolume {
	pv := &api.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}, Labels: map[string]string{}},
		Spec: api.PersistentVolumeSpec{
			PersistentVolumeSource: api.PersistentVolumeSource{Local: &api.LocalVolumeSource{Path: dir}},
			NodeAffinity: &api.VolumeNodeAffinity{Required: &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{
				MatchExpressions: []api.NodeSelectorRequirement{{Key: api.LabelHostname, Operator: api.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	if provisioned {
		pv.Annotations[api.AnnotationProvisionedBy] = api.LocalPathProvisioner
	}
	return pv
}

func TestClaimDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "pvc-1")
	// A local-path volume of this node is made on first use.
	got, err := claimDir(localVolume("pvc-1", "n1", dir, true), "n1")
	if err != nil || got != dir {
		t.Fatalf("claimDir = %q, %v", got, err)
	}
	// Writable by any user a pod runs as, whatever the umask, as
	// Kubernetes' local-path provisioners make it; a mode its users set
	// later is theirs to keep.
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Fatalf("directory not made 0777: %v %v", fi, err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := claimDir(localVolume("pvc-1", "n1", dir, true), "n1"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("the user's mode was not kept: %v %v", fi, err)
	}
	// Never another node's.
	other := filepath.Join(root, "pvc-2")
	if _, err := claimDir(localVolume("pvc-2", "n2", other, true), "n1"); err == nil {
		t.Fatal("claimDir of another node's volume succeeded")
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("another node's directory was made: %v", err)
	}
	// A volume the user made is used as it is, not created.
	mine := filepath.Join(root, "static")
	if got, err := claimDir(localVolume("static", "n1", mine, false), "n1"); err != nil || got != mine {
		t.Fatalf("claimDir = %q, %v", got, err)
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Fatalf("a user's volume directory was made: %v", err)
	}
	// A hostPath volume without affinity is usable anywhere.
	hp := &api.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "hp"}, Spec: api.PersistentVolumeSpec{
		PersistentVolumeSource: api.PersistentVolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/srv/data"}}}}
	if got, err := claimDir(hp, "n1"); err != nil || got != "/srv/data" {
		t.Fatalf("claimDir = %q, %v", got, err)
	}
	// An unsafe local-path directory is refused.
	if _, err := claimDir(localVolume("bad", "n1", "/", true), "n1"); err == nil {
		t.Fatal("claimDir of / succeeded")
	}
}

func TestActionFor(t *testing.T) {
	const root = "/data/volumes"
	now := metav1.Now()
	marked := func(pv *api.PersistentVolume, node string) *api.PersistentVolume {
		pv.Labels[api.LabelReclaimNode] = node
		return pv
	}
	deleting := func(pv *api.PersistentVolume, finalizer bool) *api.PersistentVolume {
		pv.DeletionTimestamp = &now
		if finalizer {
			pv.Finalizers = []string{api.FinalizerLocalPath}
		}
		return pv
	}
	recycle := func(pv *api.PersistentVolume, want, done string) *api.PersistentVolume {
		pv.Annotations[api.AnnotationRecycle] = want
		if done != "" {
			pv.Annotations[api.AnnotationRecycled] = done
		}
		return pv
	}
	tests := []struct {
		name string
		pv   *api.PersistentVolume
		want reclaimAction
	}{
		{"delete provisioned", deleting(marked(localVolume("a", "n1", "/anywhere/a", true), "n1"), true), reclaimDelete},
		{"provisioned but not named for the volume", deleting(marked(localVolume("a", "n1", "/etc", true), "n1"), true), reclaimNone},
		{"delete under the root", deleting(marked(localVolume("a", "n1", root+"/a", false), "n1"), true), reclaimDelete},
		{"not a user's directory elsewhere", deleting(marked(localVolume("a", "n1", "/home/me", false), "n1"), true), reclaimNone},
		{"not the root itself", deleting(marked(localVolume("a", "n1", root, false), "n1"), true), reclaimNone},
		{"deleting without the finalizer", deleting(marked(localVolume("a", "n1", root+"/a", true), "n1"), false), reclaimNone},
		{"not labelled for this node", deleting(localVolume("a", "n1", root+"/a", true), true), reclaimNone},
		{"labelled for this node but lives on another", deleting(marked(localVolume("a", "n2", root+"/a", true), "n1"), true), reclaimNone},
		{"recycle asked", recycle(marked(localVolume("a", "n1", root+"/a", true), "n1"), "uid-1", ""), reclaimRecycle},
		{"recycle done", recycle(marked(localVolume("a", "n1", root+"/a", true), "n1"), "uid-1", "uid-1"), reclaimNone},
		{"recycle for a later claim", recycle(marked(localVolume("a", "n1", root+"/a", true), "n1"), "uid-2", "uid-1"), reclaimRecycle},
		{"nothing asked", marked(localVolume("a", "n1", root+"/a", true), "n1"), reclaimNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := actionFor(tt.pv, "n1", root); got != tt.want {
				t.Errorf("actionFor = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWipeDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v")
	if err := wipeDir(dir); err != nil {
		t.Fatalf("wipe of a missing dir: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a", ".hidden", "sub/deep/b"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := wipeDir(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("after wipe: %v %v", entries, err)
	}
}

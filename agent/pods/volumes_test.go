package pods

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

func TestSetUpVolumes(t *testing.T) {
	dataDir, host := t.TempDir(), t.TempDir()
	mode := int32(0o600)
	refs := testRefs()
	refs.claims = map[string]string{"shop/data": "/srv/pv/1"}
	pod := envPod()
	typ := func(t api.HostPathType) *api.HostPathType { return &t }
	pod.Spec.Volumes = []api.Volume{
		{Name: "scratch", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}},
		{Name: "made", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: filepath.Join(host, "a/b"), Type: typ(api.HostPathDirectoryOrCreate)}}},
		{Name: "file", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: filepath.Join(host, "f/x.log"), Type: typ(api.HostPathFileOrCreate)}}},
		{Name: "cfg", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "cfg"},
			Items: []api.KeyToPath{{Key: "MODE", Path: "conf/mode.txt"}}}}},
		{Name: "creds", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "creds", DefaultMode: &mode}}},
		{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
	}
	paths, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, refs: refs}, pod)
	if err != nil {
		t.Fatal(err)
	}
	own := func(name string) string { return filepath.Join(dataDir, "pods", "u-1", "volumes", name) }
	want := map[string]string{"scratch": own("scratch"), "made": filepath.Join(host, "a/b"), "file": filepath.Join(host, "f/x.log"),
		"cfg": own("cfg"), "creds": own("creds"), "data": "/srv/pv/1"}
	for k, v := range want {
		if paths[k] != v {
			t.Errorf("path of %s = %q, want %q", k, paths[k], v)
		}
	}
	if fi, err := os.Stat(own("scratch")); err != nil || !fi.IsDir() {
		t.Errorf("emptyDir not made: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(host, "a/b")); err != nil || !fi.IsDir() {
		t.Errorf("DirectoryOrCreate not made: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(host, "f/x.log")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("FileOrCreate not made: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(own("cfg"), "conf/mode.txt")); err != nil || string(b) != "fast" {
		t.Errorf("configMap item: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(own("cfg"), "LEVEL")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("configMap key outside items written: %v", err)
	}
	fi, err := os.Stat(filepath.Join(own("creds"), "password"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(own("creds"), "password")); string(b) != "s3cret" {
		t.Errorf("secret content %q", b)
	}

	// A changed Secret is followed, removed keys go.
	refs.mu.Lock()
	refs.secrets["shop/creds"] = &api.Secret{Data: map[string][]byte{"token": []byte("t")}}
	refs.mu.Unlock()
	if _, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, refs: refs}, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(own("creds"), "password")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale secret key kept: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(own("creds"), "token")); string(b) != "t" {
		t.Errorf("new secret key %q", b)
	}
}

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		path    string
		typ     api.HostPathType
		wantErr string
	}{
		{dir, api.HostPathDirectory, ""},
		{filepath.Join(dir, "nope"), api.HostPathDirectory, "does not exist"},
		{file, api.HostPathDirectory, "not a directory"},
		{file, api.HostPathFile, ""},
		{dir, api.HostPathFile, "not a file"},
		{file, api.HostPathFileOrCreate, ""},
		{file, api.HostPathDirectoryOrCreate, "not a directory"},
		{sock, api.HostPathSocket, ""},
		{file, api.HostPathSocket, "not a socket"},
		{filepath.Join(dir, "whatever"), api.HostPathUnset, ""},
		{"/dev/null", api.HostPathCharDev, ""},
		{file, api.HostPathBlockDev, "not a block device"},
	}
	for _, tt := range tests {
		typ := tt.typ
		err := checkHostPath(&api.HostPathVolumeSource{Path: tt.path, Type: &typ})
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s %s: %v", tt.typ, tt.path, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s %s: err %v, want %q", tt.typ, tt.path, err, tt.wantErr)
		}
	}
}

func TestVolumeErrors(t *testing.T) {
	pod := envPod()
	pod.Spec.Volumes = []api.Volume{{Name: "cfg", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "missing"}}}}}
	_, err := setUpVolumes(context.Background(), volumeEnv{dataDir: t.TempDir(), refs: testRefs()}, pod)
	var ce *configError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `volume cfg: configmap "shop/missing" not found`) {
		t.Errorf("missing configMap: %v", err)
	}
	yes := true
	pod.Spec.Volumes[0].ConfigMap.Optional = &yes
	if _, err := setUpVolumes(context.Background(), volumeEnv{dataDir: t.TempDir(), refs: testRefs()}, pod); err != nil {
		t.Errorf("optional missing configMap: %v", err)
	}
	pod.Spec.Volumes = []api.Volume{{Name: "d", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
	if _, err := setUpVolumes(context.Background(), volumeEnv{dataDir: t.TempDir()}, pod); err == nil || !strings.Contains(err.Error(), "standalone") {
		t.Errorf("claim without API: %v", err)
	}
}

// TestMemoryVolumeSize sizes an emptyDir of medium Memory as the kubelet
// does: the least of the node's allocatable memory, the pod's memory
// limit (only when every container, init ones too, has one; with the
// pod's overhead) and the volume's sizeLimit.
func TestMemoryVolumeSize(t *testing.T) {
	const mi = 1 << 20
	q := resource.MustParse
	limited := func(limits ...string) *api.Pod {
		p := &api.Pod{}
		for i, l := range limits {
			c := api.Container{Name: fmt.Sprint("c", i)}
			if l != "" {
				c.Resources.Limits = api.ResourceList{api.ResourceMemory: q(l)}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		return p
	}
	withInit := limited("64Mi")
	withInit.Spec.InitContainers = []api.Container{{Name: "init"}}
	withOverhead := limited("64Mi", "32Mi")
	withOverhead.Spec.Overhead = api.ResourceList{api.ResourceMemory: q("16Mi"), api.ResourceCPU: q("250m")}
	unlimitedOverhead := limited("64Mi", "")
	unlimitedOverhead.Spec.Overhead = api.ResourceList{api.ResourceMemory: q("16Mi")}
	node := api.ResourceList{api.ResourceMemory: q("1Gi")}
	for _, tt := range []struct {
		name        string
		pod         *api.Pod
		sizeLimit   string
		allocatable api.ResourceList
		want        int64
	}{
		{"nothing known: the kernel's default", limited(""), "", nil, 0},
		{"the node's allocatable", limited(""), "", node, 1024 * mi},
		{"the pod's limit, the sum of its containers'", limited("64Mi", "32Mi"), "", node, 96 * mi},
		{"a container without a limit: the node's", limited("64Mi", ""), "", node, 1024 * mi},
		{"an init container without a limit: the node's", withInit, "", node, 1024 * mi},
		{"a sizeLimit below the pod's limit", limited("64Mi"), "8Mi", node, 8 * mi},
		{"a sizeLimit above the pod's limit", limited("64Mi"), "128Mi", node, 64 * mi},
		{"a sizeLimit alone", limited(""), "8Mi", nil, 8 * mi},
		{"a pod's limit above the node's allocatable", limited("2Gi"), "", node, 1024 * mi},
		{"the pod's limit with its overhead", withOverhead, "", node, 112 * mi},
		{"a sizeLimit between the containers' sum and the overhead's", withOverhead, "100Mi", node, 100 * mi},
		{"an overhead without every container limited: the node's", unlimitedOverhead, "", node, 1024 * mi},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var sl *resource.Quantity
			if tt.sizeLimit != "" {
				l := q(tt.sizeLimit)
				sl = &l
			}
			if got := memoryVolumeSize(tt.pod, sl, tt.allocatable); got != tt.want {
				t.Errorf("%d, want %d", got, tt.want)
			}
		})
	}
}

// TestPodWaitsForItsClaim: a pod whose claim is not bound yet waits, says
// why in its container's waiting reason, and starts once the claim binds,
// on the next try of the volume back-off: half a second after the first,
// not the ten of a crash (the claim of a local-path volume binds a moment
// after its pod).
func TestPodWaitsForItsClaim(t *testing.T) {
	clk := testingclock.NewFakeClock(testEpoch)
	refs := &fakeRefs{}
	h := newHarness(t, clk, newFakeRuntime(clk), t.TempDir(), refs)
	pod := workerPod("u1", "app", api.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{
		PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	h.m.Sync(pod)
	h.waitStatus("u1", "waiting for the claim", func(st api.PodStatus) error {
		cs, err := containerStatusOf(st, "app")
		if err != nil {
			return err
		}
		if w := cs.State.Waiting; w == nil || w.Reason != reasonCreateContainerConfigError || !strings.Contains(w.Message, "default/data is not bound") {
			return fmt.Errorf("state %+v", cs.State)
		}
		return nil
	})
	if _, ok := h.rt.run(rid("u1", "app", 0)); ok {
		t.Fatal("container started before its claim was bound")
	}
	refs.mu.Lock()
	refs.claims = map[string]string{"default/data": t.TempDir()}
	refs.mu.Unlock()
	h.step(volumeBackOffInitial)
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
}

package agent

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

package pods

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// owned is a file's group and its mode's permission and setgid bits.
type owned struct {
	gid  uint32
	mode fs.FileMode
}

func ownedBy(t *testing.T, path string) owned {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return owned{fi.Sys().(*syscall.Stat_t).Gid, fi.Mode() & (fs.ModePerm | fs.ModeSetgid)}
}

// claimTree makes a volume as a PersistentVolume's directory holds one
// before the pod: a file, a directory with a file, a link, all root's.
func claimTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "claim")
	for _, d := range []string{dir, filepath.Join(dir, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o755)
	}
	for _, f := range []string{"f", "sub/g"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, f), 0o600)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSetVolumeOwnership gives a volume to an fsGroup as the kubelet's
// SetVolumeOwnership: every file the group's, group read-write (read on a
// read-only volume), directories searchable and setgid, links themselves
// and not their targets; OnRootMismatch leaves a volume whose root is
// already the group's as it is, Always walks it again.
func TestSetVolumeOwnership(t *testing.T) {
	testtool.NeedRoot(t, "give files to other groups")
	const gid = 2345
	dir := claimTree(t)
	if err := setVolumeOwnership(dir, gid, false, corev1.FSGroupChangeOnRootMismatch); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]owned{
		"":      {gid, 0o775 | fs.ModeSetgid},
		"sub":   {gid, 0o775 | fs.ModeSetgid},
		"f":     {gid, 0o660},
		"sub/g": {gid, 0o660},
	} {
		if got := ownedBy(t, filepath.Join(dir, path)); got != want {
			t.Errorf("%q: group %d mode %v, want %d %v", path, got.gid, got.mode, want.gid, want.mode)
		}
	}
	if got := ownedBy(t, filepath.Join(dir, "link")); got.gid != gid {
		t.Errorf("link: group %d, want %d", got.gid, gid)
	}
	if got := ownedBy(t, "/etc/passwd"); got.gid == gid {
		t.Errorf("the link's target was changed")
	}

	// A file the pod's root made since, of another group: OnRootMismatch
	// leaves it, the root being right; Always gives it to the group.
	late := filepath.Join(dir, "late")
	if err := os.WriteFile(late, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chown(late, 0, 0)
	if err := setVolumeOwnership(dir, gid, false, corev1.FSGroupChangeOnRootMismatch); err != nil {
		t.Fatal(err)
	}
	if got := ownedBy(t, late); got.gid != 0 {
		t.Errorf("OnRootMismatch walked a volume whose root matched: late has group %d", got.gid)
	}
	if err := setVolumeOwnership(dir, gid, false, corev1.FSGroupChangeAlways); err != nil {
		t.Fatal(err)
	}
	if got := ownedBy(t, late); got != (owned{gid, 0o660}) {
		t.Errorf("Always: late has group %d mode %v", got.gid, got.mode)
	}

	// Read-only: group read, no write.
	ro := claimTree(t)
	if err := setVolumeOwnership(ro, gid, true, corev1.FSGroupChangeAlways); err != nil {
		t.Fatal(err)
	}
	if got := ownedBy(t, filepath.Join(ro, "f")); got != (owned{gid, 0o640}) {
		t.Errorf("read-only f: group %d mode %v, want %d -rw-r-----", got.gid, got.mode, gid)
	}
	if got := ownedBy(t, ro); got != (owned{gid, 0o755 | fs.ModeSetgid}) {
		t.Errorf("read-only root: group %d mode %v", got.gid, got.mode)
	}
}

// TestVolumesFollowFSGroup sets up a pod's ConfigMap, Secret and
// persistentVolumeClaim volumes with an fsGroup: the projected keys are
// the group's and readable by it, at every sync; the claim is the
// group's once, by the pod's OnRootMismatch, and not walked again.
func TestVolumesFollowFSGroup(t *testing.T) {
	testtool.NeedRoot(t, "give files to other groups")
	const gid = 3456
	claim := claimTree(t)
	refs := &fakeRefs{
		configMaps: map[string]*api.ConfigMap{"default/conf": {Data: map[string]string{"k": "v"}}},
		secrets:    map[string]*api.Secret{"default/creds": {Data: map[string][]byte{"pw": []byte("s")}}},
		claims:     map[string]string{"default/data": claim},
	}
	policy := corev1.FSGroupChangeOnRootMismatch
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-fsgroup"},
		Spec: api.PodSpec{
			SecurityContext: &api.PodSecurityContext{FSGroup: new(int64(gid)), FSGroupChangePolicy: &policy},
			Volumes: []api.Volume{
				{Name: "conf", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "conf"}}}},
				{Name: "creds", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "creds", DefaultMode: new(int32(0o400))}}},
				{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			},
		},
	}
	dataDir := t.TempDir()
	paths, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, refs: refs}, pod)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]owned{
		filepath.Join(paths["conf"], "k"):   {gid, 0o644},
		filepath.Join(paths["creds"], "pw"): {gid, 0o440},
		filepath.Join(paths["data"], "f"):   {gid, 0o660},
	} {
		if got := ownedBy(t, path); got != want {
			t.Errorf("%s: group %d mode %v, want %d %v", path, got.gid, got.mode, want.gid, want.mode)
		}
	}
	// The ConfigMap changes: its new key is the group's at the next sync.
	// The claim, changed meanwhile, is not walked again for the pod.
	refs.mu.Lock()
	refs.configMaps["default/conf"] = &api.ConfigMap{Data: map[string]string{"k": "v", "k2": "w"}}
	refs.mu.Unlock()
	os.Chown(filepath.Join(claim, "f"), 0, 0)
	if _, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, refs: refs}, pod); err != nil {
		t.Fatal(err)
	}
	if got := ownedBy(t, filepath.Join(paths["conf"], "k2")); got != (owned{gid, 0o644}) {
		t.Errorf("the new key: group %d mode %v", got.gid, got.mode)
	}
	if got := ownedBy(t, filepath.Join(claim, "f")); got.gid != 0 {
		t.Errorf("the claim was walked again at a sync: f has group %d", got.gid)
	}
}

// TestTokensFollowUserAndFSGroup projects a pod's tokens (the
// service-account directory's and a projected volume's serviceAccountToken)
// and a projected ConfigMap key as the kubelet does for its user and
// fsGroup: a token of the user every container runs as, 0600, read by
// the fsGroup too (0640); of root with the group's read bit when the
// containers' users differ and there is an fsGroup; else the volume's
// defaultMode. Every file of the pod is the fsGroup's.
func TestTokensFollowUserAndFSGroup(t *testing.T) {
	testtool.NeedRoot(t, "give files to other users")
	const user, other, group = 1000, 1001, 2000
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	refs := &issuingRefs{fakeRefs: testRefs(), now: func() time.Time { return now }}
	refs.configMaps["shop/conf"] = &api.ConfigMap{Data: map[string]string{"k": "v"}}
	type file struct {
		uid, gid uint32
		mode     fs.FileMode
	}
	for _, tt := range []struct {
		name    string
		users   []*int64
		fsGroup *int64
		// the service-account directory's token, the projected one, and
		// the projected ConfigMap key
		sa, projected, key file
	}{
		{"one user and fsGroup", []*int64{uid(user), uid(user)}, uid(group),
			file{user, group, 0o640}, file{user, group, 0o640}, file{0, group, 0o644}},
		{"two users and fsGroup", []*int64{uid(user), uid(other)}, uid(group),
			file{0, group, 0o640}, file{0, group, 0o640}, file{0, group, 0o644}},
		{"one user", []*int64{uid(user), uid(user)}, nil,
			file{user, 0, 0o600}, file{user, 0, 0o600}, file{0, 0, 0o644}},
		{"two users", []*int64{uid(user), uid(other)}, nil,
			file{0, 0, 0o644}, file{0, 0, 0o644}, file{0, 0, 0o644}},
		{"as the agent", []*int64{nil, nil}, nil,
			file{0, 0, 0o600}, file{0, 0, 0o644}, file{0, 0, 0o644}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			pod := userPod("tok", tt.users...)
			if tt.fsGroup != nil {
				pod.Spec.SecurityContext = &api.PodSecurityContext{FSGroup: tt.fsGroup}
			}
			pod.Spec.Volumes = []api.Volume{{Name: "api", VolumeSource: api.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: new(int32(0o644)),
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}},
				},
			}}}}
			// Twice: the second sync keeps the token, and its access.
			var paths map[string]string
			var token string
			for i := range 2 {
				var err error
				env := volumeEnv{dataDir: dataDir, refs: refs, now: now.Add(time.Duration(i) * time.Minute)}
				if paths, err = setUpVolumes(context.Background(), env, pod); err != nil {
					t.Fatal(err)
				}
				if err := setUpServiceAccountToken(context.Background(), dataDir, refs, []byte("ca"), pod, env.now); err != nil {
					t.Fatal(err)
				}
				token = serviceAccountTokenFile(dataDir, pod)
			}
			if refs.issued%2 != 0 {
				t.Errorf("%d tokens issued for two tokens over two syncs", refs.issued)
			}
			for path, want := range map[string]file{
				token:                                tt.sa,
				filepath.Join(paths["api"], "token"): tt.projected,
				filepath.Join(paths["api"], "k"):     tt.key,
			} {
				fi, err := os.Lstat(path)
				if err != nil {
					t.Fatal(err)
				}
				st := fi.Sys().(*syscall.Stat_t)
				if got := (file{st.Uid, st.Gid, fi.Mode().Perm()}); got != want {
					t.Errorf("%s: %d:%d %v, want %d:%d %v", filepath.Base(path), got.uid, got.gid, got.mode, want.uid, want.gid, want.mode)
				}
			}
			if tt.fsGroup != nil {
				for _, f := range []string{"namespace", "ca.crt"} {
					if got := ownedBy(t, filepath.Join(filepath.Dir(token), f)); got != (owned{group, 0o644}) {
						t.Errorf("%s: group %d mode %v, want the fsGroup's, 0644", f, got.gid, got.mode)
					}
				}
			}
		})
	}
}

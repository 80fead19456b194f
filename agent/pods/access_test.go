package pods

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// Users of the tests that run processes as someone else: the pod's, and
// another host user who must be kept out.
const (
	podUser   = 65534
	otherUser = 65533
)

func userPod(uid string, users ...*int64) *api.Pod {
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-" + uid, UID: k8stypes.UID("u-" + uid)}}
	pod.Spec.ServiceAccountName = "default"
	for i, u := range users {
		c := api.Container{Name: "c" + string(rune('0'+i))}
		if u != nil {
			c.SecurityContext = &api.SecurityContext{RunAsUser: u}
		}
		if i == 0 {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		} else {
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		}
	}
	return pod
}

func uid(n int64) *int64 { return &n }

func TestPodUsersAndFsUser(t *testing.T) {
	for _, tt := range []struct {
		users  []*int64
		others []int
		fs     *int64
	}{
		{[]*int64{nil, nil}, nil, nil},
		{[]*int64{uid(1000), uid(1000)}, []int{1000}, uid(1000)},
		{[]*int64{uid(1000), nil}, []int{1000}, nil},
		{[]*int64{uid(1001), uid(1000), uid(1001)}, []int{1000, 1001}, nil},
		{[]*int64{uid(7), uid(7)}, nil, uid(7)}, // 7 is the agent's own here
	} {
		pod := userPod("t", tt.users...)
		if got := podUsers(pod, 7); !slices.Equal(got, tt.others) {
			t.Errorf("podUsers(%v) = %v, want %v", tt.users, got, tt.others)
		}
		got := fsUser(pod)
		if (got == nil) != (tt.fs == nil) || (got != nil && *got != *tt.fs) {
			t.Errorf("fsUser(%v) = %v, want %v", tt.users, got, tt.fs)
		}
	}
}

// needRoot skips a test that runs processes as other users.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running processes as other users needs root")
	}
}

// asUser runs script with sh and args ($1…) as user (group 65534) and
// returns its output and error.
func asUser(t *testing.T, user int, script string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(user), Gid: 65534}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// searchableDataDir is a data dir whose ancestors other users may pass
// through, as the agent asks of its data dir, with its pods/ made as the
// agent makes them.
func searchableDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if d := UnsearchableAncestor(dir); d != "" {
		// The test's own temporary directory.
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if d := UnsearchableAncestor(dir); d != "" {
		t.Skipf("%s is not searchable by other users", d)
	}
	for _, d := range []string{dir, filepath.Join(dir, "pods")} {
		if err := EnsureDir(d, DataDirMode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// setUpPodFiles sets pod's volumes and token up as its worker does, the
// token with a ca.crt beside it, and returns the volumes' paths and the
// token file.
func setUpPodFiles(t *testing.T, dataDir string, refs RefResolver, pod *api.Pod, now time.Time) (map[string]string, string) {
	t.Helper()
	paths, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, refs: refs}, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := setUpServiceAccountToken(context.Background(), dataDir, refs, []byte("ca"), pod, now); err != nil {
		t.Fatal(err)
	}
	return paths, serviceAccountTokenFile(dataDir, pod)
}

// TestPodFilesOfAnotherUser: a pod whose containers run as another user
// can write its emptyDir, read its Secret volume and token; another user
// of the host can do none of it, nor list where pods live.
func TestPodFilesOfAnotherUser(t *testing.T) {
	needRoot(t)
	dataDir := searchableDataDir(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	refs := &issuingRefs{fakeRefs: testRefs(), now: func() time.Time { return now }}
	for _, tt := range []struct {
		name      string
		users     []*int64
		tokenMode os.FileMode
		owner     int
	}{
		// Every container as one user: the token is that user's, 0600.
		{"one user", []*int64{uid(podUser), uid(podUser)}, 0o600, podUser},
		// As the agent and as another user: 0644, behind the pod's gate.
		{"mixed", []*int64{nil, uid(podUser)}, 0o644, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := userPod(tt.name[:3], tt.users...)
			pod.Spec.Volumes = []api.Volume{
				{Name: "scratch", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}},
				{Name: "creds", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "creds"}}},
			}
			paths, token := setUpPodFiles(t, dataDir, refs, pod, now)
			fi, err := os.Stat(token)
			if err != nil || fi.Mode().Perm() != tt.tokenMode || int(fi.Sys().(*syscall.Stat_t).Uid) != tt.owner {
				t.Errorf("token %v %v: want mode %v, owner %d", fi, err, tt.tokenMode, tt.owner)
			}
			if fi, err := os.Stat(paths["scratch"]); err != nil || fi.Mode().Perm() != 0o777 {
				t.Errorf("emptyDir: %v %v, want mode 0777", fi, err)
			}
			secret := filepath.Join(paths["creds"], "password")
			ca := filepath.Join(filepath.Dir(token), "ca.crt")
			if out, err := asUser(t, podUser, `echo hi > "$1/note" && cat "$2" "$3" "$4"`, paths["scratch"], token, secret, ca); err != nil {
				t.Errorf("the pod's user: %v\n%s", err, out)
			}
			if out, err := asUser(t, otherUser, `cat "$1"`, token); err == nil {
				t.Errorf("another user read the token: %s", out)
			}
			if out, err := asUser(t, otherUser, `cat "$1"`, secret); err == nil {
				t.Errorf("another user read the secret: %s", out)
			}
			if out, err := asUser(t, otherUser, `echo x > "$1/other"`, paths["scratch"]); err == nil {
				t.Errorf("another user wrote the emptyDir: %s", out)
			}
			if out, err := asUser(t, otherUser, `ls "$1"`, filepath.Join(dataDir, "pods")); err == nil {
				t.Errorf("another user listed the pods: %s", out)
			}
		})
	}
}

// TestTokenRotationKeepsItsOwner: a rotated token is the pod's user's
// from the moment it is in place.
func TestTokenRotationKeepsItsOwner(t *testing.T) {
	needRoot(t)
	dataDir := t.TempDir()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	refs := &issuingRefs{fakeRefs: testRefs(), now: func() time.Time { return now }}
	pod := userPod("rot", uid(podUser), uid(podUser))
	for i := range 2 {
		if err := setUpServiceAccountToken(context.Background(), dataDir, refs, nil, pod, now.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(serviceAccountTokenFile(dataDir, pod))
	if err != nil || refs.issued != 2 || int(fi.Sys().(*syscall.Stat_t).Uid) != podUser {
		t.Errorf("after rotation: %v %v, %d issued", fi, err, refs.issued)
	}
}

func TestUnsearchableAncestor(t *testing.T) {
	dir := t.TempDir()
	shut := filepath.Join(dir, "shut")
	data := filepath.Join(shut, "open", "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shut, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := UnsearchableAncestor(data); got != shut {
		t.Errorf("UnsearchableAncestor = %q, want %q", got, shut)
	}
}

// TestClosePodDirs: a pod's directory an older agent left open is shut
// until its worker sets the pod's gate up again; a gate is kept.
func TestClosePodDirs(t *testing.T) {
	pods := filepath.Join(t.TempDir(), "pods")
	open, gate := filepath.Join(pods, "u-open"), filepath.Join(pods, "u-gate")
	for _, d := range []string{open, gate} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := setSearchACL(gate, []int{podUser}); err != nil {
		t.Fatal(err)
	}
	if err := ClosePodDirs(pods); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]os.FileMode{open: 0o700, gate: 0o710} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", d, fi, err, want)
		}
	}
}

// TestPodFilesOfAnotherUserUnderUmask: the directories on the way from a
// pod's gate to its token and its projected keys are searchable by the
// pod's users whatever umask the agent runs with (a hardened 027 or 077),
// as its emptyDirs are writable whatever the umask.
func TestPodFilesOfAnotherUserUnderUmask(t *testing.T) {
	needRoot(t)
	dataDir := searchableDataDir(t)
	defer syscall.Umask(syscall.Umask(0o077))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	refs := &issuingRefs{fakeRefs: testRefs(), now: func() time.Time { return now }}
	pod := userPod("umask", uid(podUser), uid(podUser))
	pod.Spec.Volumes = []api.Volume{
		{Name: "creds", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "creds",
			Items: []api.KeyToPath{{Key: "password", Path: "db/password"}}}}},
	}
	paths, token := setUpPodFiles(t, dataDir, refs, pod, now)
	dir := filepath.Dir(token)
	secret := filepath.Join(paths["creds"], "db", "password")
	if out, err := asUser(t, podUser, `cat "$1" "$2/ca.crt" "$2/namespace" "$3"`, token, dir, secret); err != nil {
		t.Errorf("the pod's user under umask 077: %v\n%s", err, out)
	}
}

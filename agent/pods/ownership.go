package pods

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/api"
)

// The permission bits the kubelet adds for a pod's fsGroup: read and
// write for the group (read alone on a read-only volume), and search on
// directories.
const (
	fsGroupRW   fs.FileMode = 0o660
	fsGroupRO   fs.FileMode = 0o440
	fsGroupExec fs.FileMode = 0o110
)

// setGroupOwnership gives an emptyDir to a pod's fsGroup as the kubelet
// does when it sets a volume up: the group owns it, may write in it, and
// what is made in it inherits the group (setgid). The volume starts
// empty, so its root is all there is to change.
func setGroupOwnership(dir string, gid int64) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	const mode = sharedDirMode | fs.ModeSetgid
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int64(st.Gid) == gid && fi.Mode()&(fs.ModePerm|fs.ModeSetgid) == mode {
		return nil
	}
	if err := os.Lchown(dir, -1, int(gid)); err != nil {
		return fmt.Errorf("give %s to group %d: %w", dir, gid, err)
	}
	return os.Chmod(dir, mode)
}

// podFSGroup is the pod's fsGroup and fsGroupChangePolicy; nil when the
// pod sets no fsGroup.
func podFSGroup(pod *api.Pod) (*int64, corev1.PodFSGroupChangePolicy) {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return nil, ""
	}
	policy := corev1.FSGroupChangeAlways
	if sc.FSGroupChangePolicy != nil {
		policy = *sc.FSGroupChangePolicy
	}
	return sc.FSGroup, policy
}

// setVolumeOwnership gives every file under dir to group gid as the
// kubelet's SetVolumeOwnership does: the group owns each file (symbolic
// links themselves, not what they point to), may read it (and write it
// unless readOnly), and may search each directory, which is setgid so
// that what is made in it is the group's too. With OnRootMismatch
// nothing is walked when dir already is the group's with those bits,
// which keeps a large volume's set-up short.
func setVolumeOwnership(dir string, gid int64, readOnly bool, policy corev1.PodFSGroupChangePolicy) error {
	if policy == corev1.FSGroupChangeOnRootMismatch && !needsOwnershipChange(dir, gid, readOnly) {
		return nil
	}
	mask := fsGroupRW
	if readOnly {
		mask = fsGroupRO
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(gid)); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fi.Mode() | mask
		if fi.IsDir() {
			want |= fs.ModeSetgid | fsGroupExec
		}
		if want == fi.Mode() {
			return nil
		}
		return os.Chmod(path, want&(fs.ModePerm|fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky))
	})
	if err != nil {
		return fmt.Errorf("fsGroup %d: %w", gid, err)
	}
	return nil
}

// needsOwnershipChange says whether dir, the root of a volume, is not yet
// the group's with the bits setVolumeOwnership gives it, as the kubelet
// checks for OnRootMismatch.
func needsOwnershipChange(dir string, gid int64, readOnly bool) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid || !fi.IsDir() {
		return true
	}
	want := fsGroupRW | fsGroupExec
	if readOnly {
		want = fsGroupRO | fsGroupExec
	}
	return fi.Mode().Perm()&want != want || fi.Mode()&fs.ModeSetgid == 0
}

// projectOwners is who the files project writes are given to: the pod's
// fsGroup (-1: none), which may read every one, and the users of some
// files by path (the projected token's, FsUser in the kubelet).
type projectOwners struct {
	gid   int
	users map[string]int
}

// of is the owner of the file at path in the volume.
func (o projectOwners) of(path string) fileOwner {
	uid, ok := o.users[path]
	if !ok {
		uid = -1
	}
	return fileOwner{uid: uid, gid: o.gid}
}

// projectOwned is project, then the volume given to the pod's fsGroup,
// read-only, as the kubelet gives its ConfigMap, Secret and projected
// volumes at every set-up (whatever the fsGroupChangePolicy): each file
// is the group's, with its read bits, before it takes its path, as the
// kubelet's AtomicWriter sets ownership before it swaps the new files
// in, so a reader of the group never finds a key it may not read. users
// gives files to users of their own (a projected token's).
func projectOwned(pod *api.Pod, dir string, data map[string][]byte, items []api.KeyToPath, defaultMode *int32, users map[string]int, what string) error {
	owners := projectOwners{gid: -1, users: users}
	gid, _ := podFSGroup(pod)
	if gid != nil {
		owners.gid = int(*gid)
	}
	if err := project(dir, data, items, defaultMode, owners, what); err != nil {
		return err
	}
	if gid != nil {
		return setVolumeOwnership(dir, *gid, true, corev1.FSGroupChangeAlways)
	}
	return nil
}

// claimOwnership gives a persistentVolumeClaim's directory to the pod's
// fsGroup by its fsGroupChangePolicy, once for the pod, as the kubelet
// does when it mounts the volume for the pod: a marker under the pod's
// directory records it, so the agent's syncs (and its restarts) do not
// walk the volume again.
func claimOwnership(dataDir string, pod *api.Pod, name, dir string, readOnly bool) error {
	gid, policy := podFSGroup(pod)
	if gid == nil {
		return nil
	}
	marker := filepath.Join(podDir(dataDir, string(pod.UID)), "fsgroup", name)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	if err := setVolumeOwnership(dir, *gid, readOnly, policy); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err != nil {
		return err
	}
	return os.WriteFile(marker, nil, 0o600)
}

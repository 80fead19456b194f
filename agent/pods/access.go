package pods

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/berth-dev/berth/api"
)

// How a pod's containers reach its files when they run as other users
// (securityContext.runAsUser) than the agent. The kubelet keeps a pod's
// files apart with mount namespaces; under the exec runtime every process
// sees the host's filesystem, so file modes must do that work:
//
//   - The data dir, its pods/ and volumes/ are DataDirMode (0711): anyone
//     may pass through to a path below, no one but the agent may list
//     them, so pod UIDs and volume names are not handed out.
//   - A pod's own directory, pods/<uid>, is the gate: only the agent may
//     enter it (0700), and a POSIX ACL lets each other user the pod's
//     containers run as pass through it, no one else. Below it the files
//     keep Kubernetes' modes (Secret keys 0644, an emptyDir 0777, the
//     token 0644 when the containers run as different users), which so
//     expose them to the pod's own users, as inside a Kubernetes pod, and
//     to no other user. A gate tells users apart, not pods: another pod
//     or host process that runs as one of those users passes it too (and
//     may read the pod's processes' environment in /proc anyway), so pods
//     to be kept apart must run as users of their own.
//   - The token is the kubelet's projected token: when every container
//     runs as one runAsUser it is that user's, mode 0600; when they run
//     as different users, 0644 (defaultMode 420) behind the gate; when
//     all run as the agent, the agent's, 0600, as no one else needs it.
//   - An emptyDir is 0777, as the kubelet makes it, so that any of the
//     pod's users may write in it. A new local-path volume's directory is
//     0777 too, as Kubernetes' local-path provisioners make it: a claim
//     outlives its pods, and the next one may run as another user. It has
//     no gate (its pods change): like a hostPath, or a local-path volume
//     on a Kubernetes node, it is open to a host user who knows its path,
//     which only the volume's object names. Host paths keep the modes
//     their owner gave them.

// DataDirMode is the mode of the directories between the root and a
// pod's gate, and of the local-path root: search only, for others. A
// directory above the agent's data dir needs it too (the server's, for
// the agent it runs).
const DataDirMode fs.FileMode = 0o711

// podDirMode is the mode of a pod's own directory: the agent's alone but
// for the ACL that lets the pod's users through.
const podDirMode fs.FileMode = 0o700

// sharedDirMode is the mode of a new emptyDir or local-path volume.
const sharedDirMode fs.FileMode = 0o777

// EnsureDir makes dir with mode, whatever the umask, and sets mode on
// one already there: these modes are what keeps pods apart.
func EnsureDir(dir string, mode fs.FileMode) error {
	if err := os.MkdirAll(dir, mode); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

// projectedDirMode is the mode of the directories the agent projects a
// pod's token and its ConfigMap and Secret keys into: the pod's users
// pass through them behind the pod's gate, whatever the umask.
const projectedDirMode fs.FileMode = 0o755

// ensureDirsBelow is EnsureDir of root and of each directory from it down
// to dir, which is root or below it.
func ensureDirsBelow(root, dir string, mode fs.FileMode) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is not below %s", dir, root)
	}
	d := root
	if err := EnsureDir(d, mode); err != nil {
		return err
	}
	if rel == "." {
		return nil
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		if err := EnsureDir(d, mode); err != nil {
			return err
		}
	}
	return nil
}

// MakeSharedDir makes a volume directory all of a pod's users may write
// in. Only a directory it makes gets sharedDirMode: one there already
// keeps what its users may since have set.
func MakeSharedDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, sharedDirMode); err != nil {
		return err
	}
	return os.Chmod(dir, sharedDirMode)
}

// runAsUser is the user a container of pod runs as (its own
// securityContext's, else the pod's), nil for the agent's own.
func runAsUser(pod *api.Pod, c *api.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.RunAsUser
	}
	return nil
}

// podUsers are the users, other than self (the agent's), that pod's
// containers run as, sorted: those the pod's gate lets through.
func podUsers(pod *api.Pod, self int) []int {
	var users []int
	for _, c := range allContainers(pod) {
		if u := runAsUser(pod, c); u != nil && int(*u) != self && !slices.Contains(users, int(*u)) {
			users = append(users, int(*u))
		}
	}
	slices.Sort(users)
	return users
}

// fsUser is the user every container of pod (init ones too) runs as, nil
// when one sets none or two differ: Kubernetes' FsUserFrom, which makes
// the projected token that user's.
func fsUser(pod *api.Pod) *int64 {
	var user *int64
	for _, c := range allContainers(pod) {
		u := runAsUser(pod, c)
		if u == nil || (user != nil && *user != *u) {
			return nil
		}
		user = u
	}
	return user
}

// allContainers is the pod's init containers then its containers.
func allContainers(pod *api.Pod) []*api.Container {
	out := make([]*api.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// ensurePodDir makes the pod's gate (see above): pods/<uid>, the agent's
// alone, which the other users of the pod's containers may pass through,
// and its volumes/ below, which only the agent may write in (a pod's user
// who could would swap a volume the agent writes for a link elsewhere).
func ensurePodDir(dataDir string, pod *api.Pod) error {
	dir := podDir(dataDir, string(pod.UID))
	if err := os.MkdirAll(dir, podDirMode); err != nil {
		return err
	}
	if err := EnsureDir(filepath.Join(dir, "volumes"), 0o755); err != nil {
		return err
	}
	users := podUsers(pod, os.Getuid())
	if len(users) == 0 {
		return os.Chmod(dir, podDirMode)
	}
	// The ACL sets the whole mode (owner rwx, group and others none): no
	// chmod first, which would shut the pod's users out for a moment.
	if err := setSearchACL(dir, users); err != nil {
		return configErrorf("containers of pod %s/%s run as users %v, whom the agent cannot let reach the pod's files: %v", pod.Namespace, pod.Name, users, err)
	}
	return nil
}

// tokenAccess is the owner and mode of a pod's token, as the kubelet
// projects it: the user all its containers run as, 0600; else, with an
// fsGroup, the agent's, 0600, which the group then reads (fsGroupMode);
// else 0644, its defaultMode 420, which the pod's gate keeps to the pod's
// own users. A pod that runs as the agent alone needs no more than 0600.
func tokenAccess(pod *api.Pod) (fileOwner, fs.FileMode) {
	owner := fileOwner{uid: -1, gid: -1}
	if gid, _ := podFSGroup(pod); gid != nil {
		owner.gid = int(*gid)
	}
	if u := fsUser(pod); u != nil {
		owner.uid = int(*u)
		return owner, owner.fsGroupMode(0o600)
	}
	if owner.gid >= 0 || len(podUsers(pod, os.Getuid())) == 0 {
		return owner, owner.fsGroupMode(0o600)
	}
	return owner, 0o644
}

// fileOwner is the user and group a file the agent writes for a pod is
// given, -1 for the agent's own; gid is the pod's fsGroup.
type fileOwner struct{ uid, gid int }

// agentOwned is a file the agent keeps as its own.
var agentOwned = fileOwner{uid: -1, gid: -1}

// fsGroupMode is mode with the read bits the kubelet's SetVolumeOwnership
// gives a read-only volume's files when the pod has an fsGroup.
func (o fileOwner) fsGroupMode(mode fs.FileMode) fs.FileMode {
	if o.gid < 0 {
		return mode
	}
	return mode | fsGroupRO
}

// set gives path to o, unless o is the agent's.
func (o fileOwner) set(path string) error {
	if o == agentOwned {
		return nil
	}
	if err := os.Lchown(path, o.uid, o.gid); err != nil {
		return fmt.Errorf("give %s to user %d group %d: %w", path, o.uid, o.gid, err)
	}
	return nil
}

// ClosePodDirs shuts every pod directory under pods that others may enter
// (one an older agent made 0755, when the data dir above it was 0700):
// until its worker sets the pod's gate up again, no one but the agent
// enters it. A gate with an ACL gives others nothing and is left alone.
func ClosePodDirs(pods string) error {
	entries, err := os.ReadDir(pods)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a first start
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if fi.Mode().Perm()&0o007 != 0 {
			if err := os.Chmod(filepath.Join(pods, e.Name()), podDirMode); err != nil {
				return err
			}
		}
	}
	return nil
}

// UnsearchableAncestor is the first directory above dir (dir itself not
// included) that other users may not pass through, "" for none: below
// it, pods that run as another user cannot reach their files.
func UnsearchableAncestor(dir string) string {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return d
		}
		if d == filepath.Dir(d) || !strings.HasPrefix(d, string(filepath.Separator)) {
			return ""
		}
	}
}

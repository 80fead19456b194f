package pods

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of at most size bytes (0: the kernel's default,
// half the memory) on dir, unless something is mounted there already (an
// agent restart finds its pods' mounts in place).
func mountTmpfs(dir string, size int64) error {
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	opts := "mode=0777"
	if size > 0 {
		opts += fmt.Sprintf(",size=%d", size)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// unmountUnder detaches whatever is mounted on the directories directly
// under dir (a pod's volumes), so that removing the pod's files removes
// no more than them and leaves no mount behind.
func unmountUnder(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if mounted, err := isMountPoint(p); err != nil || !mounted {
			continue
		}
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	return nil
}

// isMountPoint reports whether dir is on another device than its parent.
func isMountPoint(dir string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := syscall.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

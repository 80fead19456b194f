package pods

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// fsImmutable is FS_IMMUTABLE_FL of linux/fs.h: a file no one, root
// included, may unlink.
const fsImmutable = 0x10

// setImmutable sets or clears path's immutable attribute, or skips the
// test where the file system or the user may not.
func setImmutable(t *testing.T, path string, on bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		if on {
			flags |= fsImmutable
		} else {
			flags &^= fsImmutable
		}
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags)
	}
	if err != nil {
		t.Skipf("immutable attribute on %s: %v", path, err)
	}
}

// TestEvictionDoneThoughVolumesStay: an evicted pod whose volumes cannot
// be removed yet (a file in its emptyDir no one may unlink) is still
// evicted, stopped and reported, so that the eviction manager goes on;
// the worker removes the volumes once it can.
func TestEvictionDoneThoughVolumesStay(t *testing.T) {
	clk := clocktesting.NewFakeClock(testEpoch)
	dir := t.TempDir()
	h := newHarness(t, clk, newFakeRuntime(clk), dir, &fakeRefs{})
	pod := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []api.Volume{emptyDir("scratch", "", "")}
	h.m.Sync(pod)
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	stuck := filepath.Join(podVolumeDir(dir, "u1", "scratch"), "stuck")
	writeFile(t, stuck, 1)
	setImmutable(t, stuck, true)
	released := false
	release := func() {
		if !released {
			released = true
			setImmutable(t, stuck, false)
		}
	}
	t.Cleanup(release) // before the data dir is removed

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.m.Evict(ctx, "u1", "evicted"); err != nil {
		t.Fatalf("evict with volumes that cannot be removed yet: %v", err)
	}
	if st, _ := h.rep.last("u1"); st.Phase != api.PodFailed || st.Reason != eviction.ReasonEvicted {
		t.Errorf("status phase %s reason %q", st.Phase, st.Reason)
	}
	release()
	testtool.WaitFor(t, 5*time.Second, "the evicted pod's volumes removed", func() error {
		clk.Step(errorBackOffInitial)
		if _, err := os.Stat(filepath.Join(podDir(dir, "u1"), "volumes")); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("volumes: %v", err)
		}
		return nil
	})
}

package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// fullDiskEnv names, in the child of TestFullDiskRecovers, the small
// tmpfs it runs on.
const fullDiskEnv = "BERTH_TEST_FULL_DISK_DIR"

// TestFullDiskRecovers runs a store on a real file system of 4 MB (a
// tmpfs mounted in a mount namespace of the test's own), fills it until a
// commit fails with ENOSPC, and frees it: with no restart, the store
// writes again after its back-off, and reopened it holds every write it
// acknowledged and none it refused.
func TestFullDiskRecovers(t *testing.T) {
	if dir := os.Getenv(fullDiskEnv); dir != "" {
		fullDiskChild(t, dir)
		return
	}
	unshare := testtool.Need(t, "unshare")
	dir := t.TempDir()
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o size=4m berth-test "$0" && exec "$@"`,
		dir, os.Args[0], "-test.run=^TestFullDiskRecovers$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), fullDiskEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "mount") && os.Getuid() != 0 && os.Getenv(testtool.RequireEnv) != "1" {
		t.Skipf("no mount namespace with a tmpfs here (it needs root): %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestFullDiskRecovers") {
		t.Fatalf("the test on a 4 MB tmpfs: %v\n%s", err, out)
	}
}

func fullDiskChild(t *testing.T, dir string) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Blocks*uint64(st.Bsize) > 8<<20 {
		t.Fatalf("%s is not the small tmpfs (%v, %d bytes)", dir, err, st.Blocks*uint64(st.Bsize))
	}
	path := filepath.Join(dir, "state.db")
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.New(b, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	value := map[string]string{"v": strings.Repeat("x", 16<<10)}
	if _, err := s.Create(ctx, configMap("before", value)); err != nil {
		t.Fatal(err)
	}
	// Fill what the store file leaves of the disk.
	testtool.FillDisk(t, filepath.Join(dir, "filler"))
	// Write until the store's file can grow no more.
	var lost string
	var acked []string
	for i := range 1000 {
		name := fmt.Sprintf("c%d", i)
		_, err := s.Create(ctx, configMap(name, value))
		if err == nil {
			acked = append(acked, name)
			continue
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("write %s to a full disk: %v, want ENOSPC", name, err)
		}
		lost = name
		break
	}
	if lost == "" {
		t.Fatal("1000 writes of 16 KiB fit on a full 4 MB disk")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Err with a full disk: %v", err)
	}
	if _, err := s.Create(ctx, configMap("refused", nil)); err == nil {
		t.Fatal("a write was taken while the store cannot write")
	}
	clk.Step(time.Minute) // a probe, which fails: the disk is still full
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 20*time.Second, "the store to write again once the disk has room", func() error {
		clk.Step(time.Minute)
		return s.Err()
	})
	if _, err := s.Create(ctx, configMap("after", value)); err != nil {
		t.Fatalf("write once the disk has room: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	names, _ := loadNames(t, path)
	for _, n := range append(acked, "before", "after") {
		if !names[n] {
			t.Errorf("acknowledged %s is not in the reopened store", n)
		}
	}
	for _, n := range []string{lost, "refused"} {
		if names[n] {
			t.Errorf("refused %s is in the reopened store", n)
		}
	}
}

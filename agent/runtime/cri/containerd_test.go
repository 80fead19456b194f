package cri_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/testtool"
)

// drive steps clk by step whenever something waits on it, until stop is
// closed: containerd's readiness is polled on the clock.
func drive(clk *testingclock.FakeClock, step time.Duration) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			if clk.HasWaiters() {
				clk.Step(step)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// TestContainerdIsRestartedWithBackOff kills the agent's containerd and
// sees it started again only once its back-off has passed on the clock,
// 1s and then 2s, and stopped for good by Stop.
func TestContainerdIsRestartedWithBackOff(t *testing.T) {
	critest.Need(t)
	dir := critest.TempDir(t)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopDriving := drive(clk, 50*time.Millisecond)
	cd, err := cri.StartContainerd(ctx, cri.ContainerdOptions{Dir: filepath.Join(dir, "containerd"), Clock: clk})
	stopDriving()
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			cd.Stop()
		}
	}()
	cfg, err := os.ReadFile(filepath.Join(dir, "containerd", "config.toml"))
	if err != nil || !strings.Contains(string(cfg), `conf_dir = "`+filepath.Join(dir, "containerd", "cni", "net.d")+`"`) || !strings.Contains(string(cfg), `bin_dir = "/usr/lib/cni"`) {
		t.Fatalf("config.toml: %s, %v", cfg, err)
	}
	for i, wait := range []time.Duration{time.Second, 2 * time.Second} {
		pid := cd.PID()
		cd.Kill()
		testtool.WaitFor(t, 10*time.Second, "containerd dead and its restart waiting on the clock", func() error {
			if alive(pid) || !cd.Restarting() {
				return fmt.Errorf("pid %d alive %v", pid, alive(pid))
			}
			return nil
		})
		clk.Step(wait - time.Millisecond)
		if n := cd.Starts(); n != i+1 {
			t.Fatalf("containerd started again before its back-off of %s: %d starts", wait, n)
		}
		clk.Step(time.Millisecond)
		testtool.WaitFor(t, 10*time.Second, "containerd started again", func() error {
			if cd.Starts() != i+2 || !alive(cd.PID()) {
				return errors.New("not yet")
			}
			return nil
		})
		testtool.WaitFor(t, 10*time.Second, "containerd's socket", func() error {
			_, err := os.Stat(cd.Socket())
			return err
		})
	}
	pid := cd.PID()
	cd.Stop()
	stopped = true
	if alive(pid) {
		t.Fatalf("containerd %d still runs after Stop", pid)
	}
}

//go:build linux

package exec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/testtool"
)

const waitLong = 20 * time.Second

func newRuntime(t *testing.T, root string, opts ...func(*Options)) *Runtime {
	t.Helper()
	o := Options{Root: root}
	for _, f := range opts {
		f(&o)
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// killOnCleanup kills the run in dir and everything it left when the test
// ends, and removes its cgroup, whatever the runtime's state then.
func killOnCleanup(t *testing.T, dir string) {
	t.Cleanup(func() {
		var st runState
		if readJSON(filepath.Join(dir, stateFile), &st) == nil {
			if alive(st.PID, st.PIDStart) {
				syscall.Kill(-st.PID, syscall.SIGKILL)
			}
			deadline := time.Now().Add(waitLong)
			for alive(st.ShimPID, st.ShimStart) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		}
		var cfg runConfig
		if readJSON(filepath.Join(dir, configFile), &cfg) == nil {
			cgroups{}.remove(cfg.Cgroup)
		}
	})
}

func start(t *testing.T, r *Runtime, c *runtime.Container) runtime.Status {
	t.Helper()
	killOnCleanup(t, runDir(r.root, c.ID))
	s, err := r.Start(context.Background(), c)
	if err != nil {
		t.Fatalf("start %s: %v", c.ID, err)
	}
	return s
}

func sh(id runtime.ID, script string) *runtime.Container {
	return &runtime.Container{ID: id, Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}}
}

// waitExited waits for the run to end and returns its status.
func waitExited(t *testing.T, r *Runtime, id runtime.ID) runtime.Status {
	t.Helper()
	var s runtime.Status
	testtool.WaitFor(t, waitLong, id.String()+" to exit", func() error {
		var err error
		s, err = r.Status(context.Background(), id)
		if err != nil {
			return err
		}
		if s.State == runtime.StateRunning {
			return errors.New("still running")
		}
		return nil
	})
	return s
}

func logs(t *testing.T, r *Runtime, id runtime.ID, opts runtime.LogOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.Logs(context.Background(), id, opts, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func waitLog(t *testing.T, r *Runtime, id runtime.ID, want string) {
	t.Helper()
	testtool.WaitFor(t, waitLong, fmt.Sprintf("%q in the log of %s", want, id), func() error {
		var b bytes.Buffer
		if err := r.Logs(context.Background(), id, runtime.LogOptions{}, &b); err != nil {
			return err
		}
		if !strings.Contains(b.String(), want) {
			return fmt.Errorf("log is %q", b.String())
		}
		return nil
	})
}

func TestExitCodes(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	cases := []struct {
		name, script string
		code, signal int
		reason       string
	}{
		{"zero", "exit 0", 0, 0, ReasonCompleted},
		{"three", "exit 3", 3, 0, ReasonError},
		{"killed", "kill -9 $$", 137, 9, ReasonError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := runtime.ID{PodUID: "pod-exit", Name: tc.name}
			start(t, r, sh(id, tc.script))
			s := waitExited(t, r, id)
			if s.State != runtime.StateExited || s.ExitCode != tc.code || s.Signal != tc.signal || s.Reason != tc.reason {
				t.Fatalf("status = %+v, want Exited code %d signal %d reason %s", s, tc.code, tc.signal, tc.reason)
			}
			if s.StartedAt.IsZero() || s.FinishedAt.Before(s.StartedAt) {
				t.Errorf("times: started %v finished %v", s.StartedAt, s.FinishedAt)
			}
		})
	}
}

// TestRelativeRoot: an agent started with a relative data dir still runs
// containers, whose shims work in other directories.
func TestRelativeRoot(t *testing.T) {
	t.Chdir(t.TempDir())
	r := newRuntime(t, "pods")
	if !filepath.IsAbs(r.root) {
		t.Fatalf("root %q is relative", r.root)
	}
	id := runtime.ID{PodUID: "pod-relative", Name: "c"}
	start(t, r, sh(id, "exit 0"))
	if s := waitExited(t, r, id); s.Reason != ReasonCompleted {
		t.Fatalf("status %+v", s)
	}
}

func TestExitedChannelDeliversEachRun(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-chan", Name: "c"}
	start(t, r, sh(id, "exit 0"))
	select {
	case got := <-r.Exited():
		if got != id {
			t.Fatalf("Exited gave %s, want %s", got, id)
		}
	case <-time.After(waitLong):
		t.Fatal("no exit delivered")
	}
}

func TestExitedNeverBlocksWhenFull(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	n := exitedBuffer * 2
	for i := range n {
		r.notify(runtime.ID{PodUID: "p", Name: "c", Attempt: i})
	}
	for i := range n {
		select {
		case got := <-r.Exited():
			if got.Attempt != i {
				t.Fatalf("exit %d delivered as attempt %d", i, got.Attempt)
			}
		case <-time.After(waitLong):
			t.Fatalf("exit %d never delivered", i)
		}
	}
}

// TestStartNeedsShimMain: a binary that never called ShimMain cannot be
// its containers' shim; a start there is refused at once, naming why, and
// leaves nothing behind, rather than running the binary again as itself.
func TestStartNeedsShimMain(t *testing.T) {
	shimMainCalled.Store(false)
	t.Cleanup(func() { shimMainCalled.Store(true) })
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-no-shim", Name: "c"}
	_, err := r.Start(context.Background(), &runtime.Container{ID: id, Argv: []string{"/bin/true"}})
	if !errors.Is(err, errNoShimMain) {
		t.Fatalf("start: %v, want %v", err, errNoShimMain)
	}
	if _, err := os.Stat(runDir(r.root, id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("run dir after a refused start: %v", err)
	}
	if runs, err := r.List(context.Background()); err != nil || len(runs) != 0 {
		t.Errorf("runs after a refused start: %v, %v", runs, err)
	}
}

func TestStartMissingExecutable(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-missing", Name: "c"}
	killOnCleanup(t, runDir(r.root, id))
	c := &runtime.Container{ID: id, Argv: []string{"no-such-program-for-berth"}, Env: []string{"PATH=/usr/bin:/bin"}}
	s, err := r.Start(context.Background(), c)
	if err == nil {
		t.Fatal("start of a missing executable succeeded")
	}
	if s.State != runtime.StateExited || s.Reason != ReasonStartError || s.ExitCode != startErrorCode {
		t.Fatalf("status = %+v, want Exited StartError", s)
	}
	if !strings.Contains(s.Message, "not found") {
		t.Errorf("message %q does not say not found", s.Message)
	}
	got, err := r.Status(context.Background(), id)
	if err != nil || got.Reason != ReasonStartError {
		t.Fatalf("Status = %+v, %v", got, err)
	}
	if _, err := r.Start(context.Background(), c); err == nil {
		t.Fatal("second start of the same id succeeded")
	}
	select {
	case got := <-r.Exited():
		if got != id {
			t.Fatalf("Exited gave %s", got)
		}
	case <-time.After(waitLong):
		t.Fatal("no exit delivered for the failed start")
	}
}

func TestStartValidates(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	for _, c := range []*runtime.Container{
		{ID: runtime.ID{PodUID: "p", Name: "c"}},
		{ID: runtime.ID{PodUID: "p", Name: "../x"}, Argv: []string{"/bin/true"}},
		{ID: runtime.ID{PodUID: "", Name: "c"}, Argv: []string{"/bin/true"}},
	} {
		if _, err := r.Start(context.Background(), c); err == nil {
			t.Errorf("start of %+v succeeded", c)
		}
	}
}

func TestEnvAndWorkingDir(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	wd := t.TempDir()
	id := runtime.ID{PodUID: "pod-env", Name: "c"}
	c := sh(id, `echo "foo=$FOO"; echo "home=${HOME-unset}"; echo "pwd=$(pwd)"`)
	c.Env = append(c.Env, "FOO=bar baz")
	c.WorkingDir = wd
	start(t, r, c)
	if s := waitExited(t, r, id); s.ExitCode != 0 {
		t.Fatalf("status %+v", s)
	}
	want := "foo=bar baz\nhome=unset\npwd=" + wd + "\n"
	if got := logs(t, r, id, runtime.LogOptions{}); got != want {
		t.Fatalf("log = %q, want %q", got, want)
	}
}

func TestArgv0ResolvedThroughContainerPath(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	bin := t.TempDir()
	script := filepath.Join(bin, "berth-hello")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hello \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	id := runtime.ID{PodUID: "pod-path", Name: "c"}
	start(t, r, &runtime.Container{ID: id, Argv: []string{"berth-hello", "world"}, Env: []string{"PATH=/nonexistent:" + bin}})
	waitExited(t, r, id)
	if got := logs(t, r, id, runtime.LogOptions{}); got != "hello world\n" {
		t.Fatalf("log = %q", got)
	}
}

func TestRunAsUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to change credentials")
	}
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-user", Name: "c"}
	uid, gid := int64(65534), int64(65533)
	c := sh(id, "id -u; id -g; id -G")
	c.WorkingDir = "/"
	c.RunAsUser, c.RunAsGroup = &uid, &gid
	start(t, r, c)
	if s := waitExited(t, r, id); s.ExitCode != 0 {
		t.Fatalf("status %+v, log %q", s, logs(t, r, id, runtime.LogOptions{}))
	}
	if got := logs(t, r, id, runtime.LogOptions{}); got != "65534\n65533\n65533\n" {
		t.Fatalf("id output = %q, want uid 65534, gid 65533 and no other group", got)
	}
}

func TestStopTrappedTermNeedsNoKill(t *testing.T) {
	// On a fake clock the grace period never ends: Stop can only return
	// because the container exited on SIGTERM.
	clk := clocktesting.NewFakeClock(time.Now())
	r := newRuntime(t, t.TempDir(), func(o *Options) { o.Clock = clk })
	id := runtime.ID{PodUID: "pod-stop", Name: "trap"}
	start(t, r, sh(id, trapScript(0)))
	waitLog(t, r, id, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := r.Stop(ctx, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	s, _ := r.Status(ctx, id)
	if s.State != runtime.StateExited || s.ExitCode != 0 || s.Signal != 0 {
		t.Fatalf("status %+v, want exit 0 from the TERM trap", s)
	}
	if err := r.Stop(ctx, id, time.Hour); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

func TestStopKillsGroupAfterGrace(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	r := newRuntime(t, t.TempDir(), func(o *Options) { o.Clock = clk })
	id := runtime.ID{PodUID: "pod-stop", Name: "stubborn"}
	// The child inherits the ignored TERM too.
	start(t, r, sh(id, "trap '' TERM; sleep 1000 & echo child=$!; wait"))
	waitLog(t, r, id, "child=")
	childPID, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(logs(t, r, id, runtime.LogOptions{}), "child=")))
	if err != nil {
		t.Fatal(err)
	}
	childStart, err := processStart(childPID)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop(ctx, id, 30*time.Second) }()
	testtool.WaitFor(t, waitLong, "Stop to wait out the grace period", func() error {
		if !clk.HasWaiters() {
			return errors.New("no timer yet")
		}
		return nil
	})
	if s, _ := r.Status(ctx, id); s.State != runtime.StateRunning {
		t.Fatalf("exited on SIGTERM it ignores: %+v", s)
	}
	clk.Step(30 * time.Second)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	s, _ := r.Status(ctx, id)
	if s.ExitCode != 137 || s.Signal != 9 {
		t.Fatalf("status %+v, want SIGKILL", s)
	}
	if alive(childPID, childStart) {
		t.Fatalf("child sleep %d of the container survived", childPID)
	}
}

func TestStopRealGrace(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-stop", Name: "real"}
	start(t, r, sh(id, "trap '' TERM; echo ready; while :; do sleep 0.05; done"))
	waitLog(t, r, id, "ready")
	if err := r.Stop(context.Background(), id, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.Status(context.Background(), id); s.Signal != 9 {
		t.Fatalf("status %+v, want SIGKILL after grace", s)
	}
}

func TestMainExitKillsLeftovers(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-leftover", Name: "c"}
	start(t, r, sh(id, "sleep 1000 & echo child=$!; exit 0"))
	waitExited(t, r, id)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(logs(t, r, id, runtime.LogOptions{}), "child=")))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := readProcStat(pid); err == nil && s.State != 'Z' && s.PGID != 0 {
		// The pid may be reused by now, but not in the container's group.
		var st runState
		readJSON(filepath.Join(runDir(r.root, id), stateFile), &st)
		if s.PGID == st.PID {
			t.Fatalf("background child %d outlived the container", pid)
		}
	}
}

func TestLogsTail(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-logs", Name: "tail"}
	start(t, r, sh(id, "for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; done"))
	waitExited(t, r, id)
	if got := logs(t, r, id, runtime.LogOptions{TailLines: 3}); got != "line8\nline9\nline10\n" {
		t.Fatalf("tail 3 = %q", got)
	}
	if got := logs(t, r, id, runtime.LogOptions{TailLines: 100}); !strings.HasPrefix(got, "line1\n") {
		t.Fatalf("tail 100 = %q", got)
	}
	var b bytes.Buffer
	if err := r.Logs(context.Background(), runtime.ID{PodUID: "nope", Name: "c"}, runtime.LogOptions{}, &b); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("logs of an unknown run: %v", err)
	}
}

func TestLogsFollow(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	gate := filepath.Join(t.TempDir(), "go")
	id := runtime.ID{PodUID: "pod-logs", Name: "follow"}
	start(t, r, sh(id, fmt.Sprintf("echo first; while [ ! -e %s ]; do sleep 0.02; done; echo second", gate)))
	var out testtool.Buffer
	done := make(chan error, 1)
	go func() { done <- r.Logs(context.Background(), id, runtime.LogOptions{Follow: true}, &out) }()
	testtool.WaitFor(t, waitLong, "the first line", func() error {
		if out.String() != "first\n" {
			return fmt.Errorf("followed %q", out.String())
		}
		return nil
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done, "follow did not end when the run exited")
	if out.String() != "first\nsecond\n" {
		t.Fatalf("followed %q", out.String())
	}
}

func TestLogsFollowEndsWithContext(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-logs", Name: "ctx"}
	start(t, r, sh(id, "echo ready; while :; do sleep 0.05; done"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out testtool.Buffer
	go func() { done <- r.Logs(ctx, id, runtime.LogOptions{Follow: true}, &out) }()
	testtool.WaitFor(t, waitLong, "ready", func() error {
		if out.String() != "ready\n" {
			return fmt.Errorf("followed %q", out.String())
		}
		return nil
	})
	cancel()
	waitDone(t, done, "follow did not end with its context")
}

// numbered is lines "line00000\n" … for i in [from, to): 10 bytes each.
func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "line%05d\n", i)
	}
	return b.String()
}

const printLines = `i=%d; while [ $i -lt %d ]; do printf 'line%%05d\n' $i; i=$((i+1)); done`

func shrinkLogs(t *testing.T, n int64) {
	old := logMaxBytes
	logMaxBytes = n
	t.Cleanup(func() { logMaxBytes = old })
}

func TestLogRotation(t *testing.T) {
	shrinkLogs(t, 1000)
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-logs", Name: "rotate"}
	start(t, r, sh(id, fmt.Sprintf(printLines, 0, 1000)))
	waitExited(t, r, id)
	dir := runDir(r.root, id)
	for n := range logFiles {
		fi, err := os.Stat(logPath(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != 1000 {
			t.Errorf("%s holds %d bytes, want 1000", logPath(dir, n), fi.Size())
		}
	}
	if _, err := os.Stat(logPath(dir, logFiles)); err == nil {
		t.Errorf("%s kept", logPath(dir, logFiles))
	}
	// 10,000 bytes written, the last 5 files of 1000 kept.
	if got := logs(t, r, id, runtime.LogOptions{}); got != numbered(500, 1000) {
		t.Fatalf("logs: %d bytes, starting %q", len(got), got[:min(20, len(got))])
	}
	if got := logs(t, r, id, runtime.LogOptions{TailLines: 150}); got != numbered(850, 1000) {
		t.Fatalf("tail across files: %q…", got[:min(20, len(got))])
	}
}

func TestLogsFollowAcrossRotation(t *testing.T) {
	shrinkLogs(t, 1000)
	r := newRuntime(t, t.TempDir())
	gates := t.TempDir()
	id := runtime.ID{PodUID: "pod-logs", Name: "follow-rotate"}
	// Three bursts of 150 lines (1500 bytes): each rotates the file the
	// follower reads.
	script := ""
	for b := range 3 {
		script += fmt.Sprintf("while [ ! -e %s/%d ]; do sleep 0.02; done; ", gates, b)
		script += fmt.Sprintf(printLines, b*150, (b+1)*150) + "; "
	}
	start(t, r, sh(id, script))
	var out testtool.Buffer
	done := make(chan error, 1)
	go func() { done <- r.Logs(context.Background(), id, runtime.LogOptions{Follow: true}, &out) }()
	for b := range 3 {
		if err := os.WriteFile(filepath.Join(gates, strconv.Itoa(b)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		want := numbered(0, (b+1)*150)
		testtool.WaitFor(t, waitLong, fmt.Sprintf("burst %d", b), func() error {
			if got := out.String(); got != want {
				return fmt.Errorf("followed %d bytes, want %d", len(got), len(want))
			}
			return nil
		})
		// The follower holds the file it reads and its times, not the
		// files rotation has moved it past.
		if n := openLogFiles(t); b < 2 && n > 2 {
			t.Errorf("after burst %d the follower holds %d log files open", b, n)
		}
	}
	waitDone(t, done, "follow did not end")
	if got := out.String(); got != numbered(0, 450) {
		t.Fatalf("followed %d bytes, want every line once", len(got))
	}
}

func TestAdoptAfterClose(t *testing.T) {
	root := t.TempDir()
	r1, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	id := runtime.ID{PodUID: "pod-adopt", Name: "c", Attempt: 2}
	s1 := start(t, r1, sh(id, trapScript(7)))
	waitLog(t, r1, id, "ready")
	done := runtime.ID{PodUID: "pod-adopt", Name: "done"}
	start(t, r1, sh(done, "exit 4"))
	waitExited(t, r1, done)
	r1.Close()

	r2 := newRuntime(t, root)
	s2, err := r2.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s2.State != runtime.StateRunning || s2.PID != s1.PID {
		t.Fatalf("adopted %+v, want Running pid %d", s2, s1.PID)
	}
	if d, _ := r2.Status(context.Background(), done); d.State != runtime.StateExited || d.ExitCode != 4 {
		t.Fatalf("adopted exited run %+v", d)
	}
	list, _ := r2.List(context.Background())
	if len(list) != 2 || list[0].ID != id || list[1].ID != done {
		t.Fatalf("list %+v", list)
	}
	if err := r2.Stop(context.Background(), id, time.Minute); err != nil {
		t.Fatal(err)
	}
	s, _ := r2.Status(context.Background(), id)
	if s.ExitCode != 7 || s.Reason != ReasonError {
		t.Fatalf("status after stop %+v, want exit 7", s)
	}
	select {
	case got := <-r2.Exited():
		if got != id {
			t.Fatalf("Exited gave %s", got)
		}
	case <-time.After(waitLong):
		t.Fatal("no exit delivered for the adopted run")
	}
}

func TestAdoptAfterAgentKilled(t *testing.T) {
	// The shim orphaned by the killed agent becomes this process's child,
	// so the runtime that adopts it reaps it: no zombie is left behind.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Logf("subreaper: %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	root := t.TempDir()
	id := runtime.ID{PodUID: "killed-agent", Name: "c"}
	killOnCleanup(t, runDir(root, id))
	agent := osexec.Command("/proc/self/exe", "-test.run=^$")
	agent.Env = append(os.Environ(), agentEnv+"="+root)
	agent.Stderr = os.Stderr
	stdout, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		agent.Process.Kill()
		agent.Wait()
		t.Fatalf("agent: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "started ")))
	if err != nil {
		t.Fatalf("agent said %q", line)
	}
	agent.Process.Signal(syscall.SIGKILL)
	agent.Wait()

	pidStart, err := processStart(pid)
	if err != nil || !alive(pid, pidStart) {
		t.Fatalf("container %d died with its agent: %v", pid, err)
	}
	r := newRuntime(t, root)
	s, err := r.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != runtime.StateRunning || s.PID != pid {
		t.Fatalf("adopted %+v, want Running pid %d", s, pid)
	}
	waitLog(t, r, id, "ready")
	if err := r.Stop(context.Background(), id, time.Minute); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.Status(context.Background(), id); s.ExitCode != 5 {
		t.Fatalf("status %+v, want the container's own exit 5", s)
	}
}

func TestAdoptLostRun(t *testing.T) {
	root := t.TempDir()
	id := runtime.ID{PodUID: "pod-lost", Name: "c"}
	dir := runDir(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(filepath.Join(dir, configFile), runConfig{Container: *sh(id, "true")}); err != nil {
		t.Fatal(err)
	}
	// A pid that cannot be the one recorded: its start time differs.
	self, _ := processStart(os.Getpid())
	if err := writeJSON(filepath.Join(dir, stateFile), runState{ShimPID: os.Getpid(), ShimStart: self + 1, PID: os.Getpid(), PIDStart: self + 1}); err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, root)
	s, err := r.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != runtime.StateUnknown || s.Reason != ReasonUnknown || s.ExitCode != 137 {
		t.Fatalf("lost run %+v, want Unknown ContainerStatusUnknown 137", s)
	}
	if err := r.Stop(context.Background(), id, time.Second); err != nil {
		t.Fatalf("stop of a lost run: %v", err)
	}
	if err := r.Remove(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

func TestRemove(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-rm", Name: "c"}
	start(t, r, sh(id, "echo ready; while :; do sleep 0.05; done"))
	if err := r.Remove(context.Background(), id); err == nil {
		t.Fatal("removed a running run")
	}
	if err := r.Stop(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.root, id.PodUID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pod directory left: %v", err)
	}
	if _, err := r.Status(context.Background(), id); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("status after remove: %v", err)
	}
	if err := r.Stop(context.Background(), id, 0); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("stop after remove: %v", err)
	}
}

func TestExec(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-exec", Name: "c"}
	c := sh(id, "while :; do sleep 0.05; done")
	c.Env = append(c.Env, "FOO=bar")
	c.WorkingDir = t.TempDir()
	start(t, r, c)
	ctx := context.Background()

	out, code, err := r.Exec(ctx, id, []string{"sh", "-c", "echo $FOO; pwd; exit 4"})
	if err != nil || code != 4 || string(out) != "bar\n"+c.WorkingDir+"\n" {
		t.Fatalf("exec = %q, %d, %v", out, code, err)
	}
	// Without a workingDir, the container and its execs start in /, not
	// in the agent's directory.
	id2 := runtime.ID{PodUID: "pod-exec", Name: "nodir"}
	start(t, r, sh(id2, "pwd; while :; do sleep 0.05; done"))
	if out, _, err := r.Exec(ctx, id2, []string{"pwd"}); err != nil || string(out) != "/\n" {
		t.Fatalf("pwd in an exec of a container without workingDir = %q, %v; want /", out, err)
	}
	out, _, err = r.Exec(ctx, id, []string{"head", "-c", "20000", "/dev/zero"})
	if err != nil || len(out) != execOutputMax {
		t.Fatalf("exec output %d bytes, %v; want capped at %d", len(out), err, execOutputMax)
	}
	if _, _, err := r.Exec(ctx, id, []string{"no-such-program-for-berth"}); err == nil {
		t.Fatal("exec of a missing program succeeded")
	}

	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	out, _, err = r.Exec(tctx, id, []string{"sh", "-c", "sleep 1000 & echo $!; wait"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exec past its deadline: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("exec output %q", out)
	}
	testtool.WaitFor(t, waitLong, "the exec's child to die", func() error {
		if s, err := readProcStat(child); err == nil && s.State != 'Z' && strings.Contains(procComm(child), "sleep") {
			return fmt.Errorf("sleep %d alive", child)
		}
		return nil
	})
}

func procComm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return string(b)
}

func TestStats(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-stats", Name: "busy"}
	start(t, r, sh(id, "while :; do :; done"))
	testtool.WaitFor(t, waitLong, "CPU time and memory", func() error {
		s, err := r.Stats(context.Background(), id)
		if err != nil {
			return err
		}
		if s.CPUNanos <= 0 || s.MemoryBytes <= 0 {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
}

func TestDiskUsage(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-du", Name: "writer"}
	// 3MiB of output, then the run ends: its log still counts.
	start(t, r, sh(id, "head -c 3145728 /dev/zero"))
	waitExited(t, r, id)
	n, err := r.DiskUsage(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if n < 3<<20 || n > 3<<20+256<<10 {
		t.Errorf("disk usage %d, want the 3MiB log and a little more", n)
	}
	if _, err := r.DiskUsage(context.Background(), runtime.ID{PodUID: "nope", Name: "x"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("disk usage of an unknown run: %v", err)
	}
}

func TestCgroupLimits(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	caps := r.Capabilities()
	if !caps.MemoryLimit || !caps.CPULimit {
		t.Skipf("cgroups not writable here (%+v)", caps)
	}
	id := runtime.ID{PodUID: "pod-cg", Name: "limits"}
	c := sh(id, "while :; do sleep 0.05; done")
	c.Limits = runtime.Limits{MilliCPU: 500, MemoryBytes: 64 << 20}
	c.OOMScoreAdj = 500
	s := start(t, r, c)
	cgp := r.runs[id].cfg.Cgroup
	var mem, quota string
	if cgp.Version == "v2" {
		mem, quota = "memory.max", "cpu.max"
	} else {
		mem, quota = "memory.limit_in_bytes", "cpu.cfs_quota_us"
	}
	if b, _ := os.ReadFile(filepath.Join(cgp.Memory, mem)); strings.TrimSpace(string(b)) != strconv.Itoa(64<<20) {
		t.Errorf("%s = %q", mem, b)
	}
	if b, _ := os.ReadFile(filepath.Join(cgp.CPU, quota)); !strings.HasPrefix(string(b), "50000") {
		t.Errorf("%s = %q", quota, b)
	}
	if !contains(cgp.procs(), s.PID) {
		t.Errorf("pid %d not in %s", s.PID, cgp.Memory)
	}
	if b, _ := os.ReadFile("/proc/" + strconv.Itoa(s.PID) + "/oom_score_adj"); strings.TrimSpace(string(b)) != "500" {
		t.Errorf("oom_score_adj = %q", b)
	}
	if _, err := r.Stats(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cgp.Memory); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cgroup %s left: %v", cgp.Memory, err)
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestMemoryLimitOOMKilled(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	if !r.Capabilities().MemoryLimit {
		t.Skipf("cannot limit memory here (%+v)", r.Capabilities())
	}
	id := runtime.ID{PodUID: "pod-cg", Name: "oom"}
	c := sh(id, `a=$(head -c 300000000 /dev/zero | tr '\0' a); echo survived`)
	c.Limits.MemoryBytes = 32 << 20
	start(t, r, c)
	s := waitExited(t, r, id)
	if s.Reason != ReasonOOMKilled || s.ExitCode == 0 {
		t.Fatalf("status %+v, log %q; want OOMKilled", s, logs(t, r, id, runtime.LogOptions{}))
	}
}

func BenchmarkStart(b *testing.B) {
	root := b.TempDir()
	r, err := New(Options{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() }) // after the runs are stopped
	var ids []runtime.ID
	b.Cleanup(func() {
		for _, id := range ids {
			r.Stop(context.Background(), id, 0)
			r.Remove(context.Background(), id)
		}
	})
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		id := runtime.ID{PodUID: "bench", Name: "sleep", Attempt: i}
		if _, err := r.Start(ctx, &runtime.Container{ID: id, Argv: []string{"sleep", "1000"}}); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
}

func TestWithoutCgroups(t *testing.T) {
	old := cgroupMount
	cgroupMount = t.TempDir()
	t.Cleanup(func() { cgroupMount = old })
	r := newRuntime(t, t.TempDir())
	if c := r.Capabilities(); c != (runtime.Capabilities{}) {
		t.Fatalf("capabilities %+v with no cgroups", c)
	}
	id := runtime.ID{PodUID: "pod-nocg", Name: "busy"}
	c := sh(id, "while :; do :; done")
	c.Limits = runtime.Limits{MilliCPU: 100, MemoryBytes: 1 << 20} // not enforceable: ignored
	start(t, r, c)
	testtool.WaitFor(t, waitLong, "CPU time and memory from /proc", func() error {
		s, err := r.Stats(context.Background(), id)
		if err != nil {
			return err
		}
		if s.CPUNanos <= 0 || s.MemoryBytes <= 0 {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
	if err := r.Stop(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.Status(context.Background(), id); s.Signal != 9 {
		t.Fatalf("status %+v", s)
	}
}

// TestExecStream: a streamed exec reads its input and writes stdout and
// stderr apart, with the run's environment; on a terminal it has a
// controlling terminal of the size asked for, and one output.
func TestExecStream(t *testing.T) {
	r := newRuntime(t, t.TempDir())
	id := runtime.ID{PodUID: "pod-exec-stream", Name: "c"}
	c := sh(id, "while :; do sleep 0.05; done")
	c.Env = append(c.Env, "FOO=bar")
	start(t, r, c)
	ctx := context.Background()

	var stdout, stderr bytes.Buffer
	code, err := r.ExecStream(ctx, id, runtime.ExecOptions{
		Argv:  []string{"sh", "-c", "read line; echo out $line $FOO; echo err >&2; exit 3"},
		Stdin: strings.NewReader("hello\n"), Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil || code != 3 || stdout.String() != "out hello bar\n" || stderr.String() != "err\n" {
		t.Fatalf("exec = %d, %v; stdout %q, stderr %q", code, err, stdout.String(), stderr.String())
	}

	// No input: the command reads end of file at once.
	stdout.Reset()
	if code, err := r.ExecStream(ctx, id, runtime.ExecOptions{Argv: []string{"cat"}, Stdout: &stdout}); err != nil || code != 0 || stdout.Len() != 0 {
		t.Fatalf("exec without input = %d, %v, %q", code, err, stdout.String())
	}

	// A terminal: sized as asked before it starts, its own session, one
	// output.
	resize := make(chan runtime.TerminalSize, 1)
	resize <- runtime.TerminalSize{Width: 100, Height: 40}
	inR, inW := io.Pipe()
	var term testtool.Buffer
	done := make(chan error, 1)
	go func() {
		code, err := r.ExecStream(ctx, id, runtime.ExecOptions{
			Argv:  []string{"sh", "-c", `read x; stty size; [ -t 0 ] && echo tty $TERM; echo to-stderr >&2; exit 5`},
			Stdin: inR, Stdout: &term, TTY: true, Resize: resize,
		})
		if err == nil && code != 5 {
			err = fmt.Errorf("exit code %d, want 5", code)
		}
		done <- err
	}()
	if _, err := io.WriteString(inW, "go\n"); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done, "terminal exec did not end")
	inW.Close()
	out := term.String()
	for _, want := range []string{"40 100", "tty xterm", "to-stderr"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output %q lacks %q", out, want)
		}
	}

	if _, err := r.ExecStream(ctx, id, runtime.ExecOptions{Argv: []string{"no-such-program-for-berth"}}); err == nil {
		t.Error("exec of a missing program succeeded")
	}
}

// openLogFiles counts this process's open files that are run logs or
// their times (output.log*).
func openLogFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.Contains(filepath.Base(target), logFile) {
			n++
		}
	}
	return n
}

// waitDone waits for the error a goroutine of the test sends on done, and
// fails the test with it, or with what when it does not come in time.
func waitDone(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLong):
		t.Fatal(what)
	}
}

// TestSetupWarningIsLoggedNotTheMessage provokes a warning from the real
// shim (an oom_score_adj the kernel refuses, as it refuses a lower score
// to an agent without CAP_SYS_RESOURCE): the runtime logs it once, and
// neither the running nor the finished container's status carries it, so
// that an OOM kill or an exit is not reported with an unrelated message.
func TestSetupWarningIsLoggedNotTheMessage(t *testing.T) {
	var out testtool.Buffer
	r := newRuntime(t, t.TempDir(), func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&out, nil)) })
	id := runtime.ID{PodUID: "pod-warn", Name: "warned"}
	c := sh(id, "while :; do sleep 0.05; done")
	c.OOMScoreAdj = 2000 // out of the kernel's -1000..1000
	if s := start(t, r, c); s.State != runtime.StateRunning || s.Message != "" {
		t.Errorf("started: %s %q", s.State, s.Message)
	}
	if s, err := r.Status(context.Background(), id); err != nil || s.Message != "" {
		t.Errorf("running: %q %v", s.Message, err)
	}
	if err := r.Stop(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	if s := waitExited(t, r, id); s.Message != "" {
		t.Errorf("exited (%d, %s): message %q", s.ExitCode, s.Reason, s.Message)
	}
	logged := out.String()
	if n := strings.Count(logged, "container started with warnings"); n != 1 || !strings.Contains(logged, "oom_score_adj") || !strings.Contains(logged, id.String()) {
		t.Errorf("the warning is logged %d times, want once naming the container and oom_score_adj:\n%s", n, logged)
	}
}

//go:build linux

package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readyFD is the descriptor on which the shim tells the runtime that the
// container started or failed to: it closes it after writing state.json or
// exit.json.
const readyFD = 3

// drainTimeout bounds how long the shim waits for the output pipe to close
// and its children to be reaped once the container's processes are killed
// (a process that escaped the process group and the cgroup may live on).
const drainTimeout = 5 * time.Second

// ShimMain runs the shim and exits when ShimEnv is set, and returns at once
// otherwise. The berth binary, and every test binary that starts
// containers, calls it first thing in main, so the runtime can start
// /proc/self/exe as the shim of a container.
func ShimMain() {
	shimMainCalled.Store(true)
	dir := os.Getenv(ShimEnv)
	if dir == "" {
		return
	}
	os.Unsetenv(ShimEnv)
	// The agent signals the container's process group, never the shim: the
	// shim must live to record the exit.
	// Caught, not ignored: an ignored signal stays ignored across exec, and
	// the container must get the default dispositions.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for range sigs {
		}
	}()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// The container must not inherit the ready pipe, or the runtime would
	// wait for the container's end instead of its start.
	syscall.CloseOnExec(readyFD)
	ready := os.NewFile(readyFD, "ready")
	if err := runShim(dir, ready); err != nil {
		log.Error("shim", "dir", dir, "err", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// shimMainCalled is whether this binary called ShimMain, and so can be
// the shim Start runs as /proc/self/exe.
var shimMainCalled atomic.Bool

// errNoShimMain refuses a start in a binary that cannot be its shim: it
// would run as itself (a test binary would run its tests again, and
// start shims of its own), and the start would wait for it to end.
var errNoShimMain = errors.New("this binary cannot be a container's shim: its main (a test binary's TestMain) must call exec.ShimMain first")

// runShim starts the container of dir, records it, waits for it and
// records its exit.
func runShim(dir string, ready *os.File) error {
	defer ready.Close()
	var cfg runConfig
	if err := readJSON(filepath.Join(dir, configFile), &cfg); err != nil {
		return err
	}
	c := cfg.Container
	startFailed := func(err error) error {
		e := runExit{ExitCode: startErrorCode, FinishedAt: time.Now().UTC(), Reason: ReasonStartError, Message: err.Error()}
		return writeJSON(filepath.Join(dir, exitFile), e)
	}
	if cfg.LogMaxBytes <= 0 {
		cfg.LogMaxBytes = logMaxBytes
	}
	logw, err := newRotatingWriter(dir, cfg.LogMaxBytes, logFiles, time.Now)
	if err != nil {
		return startFailed(err)
	}
	defer logw.Close()
	path, err := lookPath(c.Argv[0], c.Env, workingDir(&c))
	if err != nil {
		return startFailed(err)
	}
	attr := &syscall.SysProcAttr{Setsid: true}
	if c.RunAsUser != nil || c.RunAsGroup != nil {
		// No supplementary groups: the process must not keep the agent's.
		cred := &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
		if c.RunAsUser != nil {
			cred.Uid = uint32(*c.RunAsUser)
		}
		if c.RunAsGroup != nil {
			cred.Gid = uint32(*c.RunAsGroup)
		}
		attr.Credential = cred
	}
	if cfg.Cgroup.Version == "v2" {
		fd, err := unix.Open(cfg.Cgroup.Memory, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return startFailed(fmt.Errorf("open cgroup: %w", err))
		}
		defer unix.Close(fd)
		attr.UseCgroupFD, attr.CgroupFD = true, fd
	}
	// Orphans of the container become the shim's children, so they are
	// reaped here and not left as zombies to the machine's init.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return startFailed(fmt.Errorf("subreaper: %w", err))
	}
	stdio, err := openStdio(&c)
	if err != nil {
		return startFailed(err)
	}
	defer stdio.close()
	if stdio.term != nil {
		// The terminal is the container's controlling one: its session
		// gets the terminal's signals (SIGINT on Ctrl-C, SIGWINCH).
		attr.Setctty, attr.Ctty = true, 0
	}
	// Listening before the container starts, so that a session can
	// attach as soon as the runtime knows the container runs.
	l, err := listenAttach(dir)
	if err != nil {
		return startFailed(err)
	}
	defer os.Remove(attachSocketPath(dir))
	defer l.Close()
	hub := newAttachHub(stdio.input, stdio.term, c.StdinOnce)
	served := make(chan struct{})
	go func() {
		hub.serve(l)
		close(served)
	}()
	defer func() {
		l.Close()
		<-served
		hub.wait(sessionDrain)
	}()
	env := c.Env
	if c.TTY {
		env = withTerm(env)
	}
	argv := append([]string{}, c.Argv...)
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Dir:   workingDir(&c),
		Env:   env,
		Files: stdio.child[:],
		Sys:   attr,
	})
	stdio.started()
	if err != nil {
		hub.outputEnded()
		return startFailed(err)
	}
	pid := proc.Pid
	// The reaper below waits for it; the handle is not needed.
	_ = proc.Release()
	st := runState{ShimPID: os.Getpid(), PID: pid, StartedAt: time.Now().UTC()}
	if cfg.Cgroup.Version == "v1" {
		if err := cfg.Cgroup.join(pid); err != nil {
			st.Warnings = append(st.Warnings, err.Error())
		}
	}
	if c.OOMScoreAdj != 0 {
		if err := os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte(strconv.Itoa(c.OOMScoreAdj)), 0); err != nil {
			st.Warnings = append(st.Warnings, fmt.Sprintf("oom_score_adj: %v", err))
		}
	}
	st.ShimStart, _ = processStart(os.Getpid())
	st.PIDStart, _ = processStart(pid)
	// One loop reaps every child: the container's main process (its status
	// is the run's exit) and the orphans handed to the shim.
	exited := make(chan unix.WaitStatus, 1)
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		for {
			var ws unix.WaitStatus
			wpid, err := unix.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return // ECHILD: none left
			}
			if wpid == pid {
				exited <- ws
			}
		}
	}()
	copied := make(chan struct{})
	go func() {
		stdio.copyOutput(logw, hub)
		hub.outputEnded()
		close(copied)
	}()
	if err := writeJSON(filepath.Join(dir, stateFile), st); err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
		return startFailed(err)
	}
	ready.Close()

	ws := <-exited
	// The container ends with its main process: what it left behind goes.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	cfg.Cgroup.killAll()
	drain, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	select {
	case <-copied:
	case <-drain.Done():
		// A process that left the group holds the output open: what
		// it writes from now on is not the container's.
		hub.outputEnded()
	}
	stdio.closeOutput()
	select {
	case <-reaped:
	case <-drain.Done():
	}
	e := runExit{FinishedAt: time.Now().UTC()}
	if ws.Signaled() {
		e.Signal = int(ws.Signal())
		e.ExitCode = 128 + e.Signal
	} else {
		e.ExitCode = ws.ExitStatus()
	}
	e.Reason = exitReason(e.ExitCode, e.ExitCode != 0 && cfg.Cgroup.oomKilled())
	return writeJSON(filepath.Join(dir, exitFile), e)
}

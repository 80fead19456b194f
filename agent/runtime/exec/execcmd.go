//go:build linux

package exec

import (
	"context"
	"errors"
	"fmt"
	osexec "os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/agent/runtime"
)

// execOutputMax caps the output Exec returns, as the kubelet caps a probe's.
const execOutputMax = 10 << 10

// execWaitDelay bounds how long Exec waits for its output once the command
// has ended or been killed, should a process that left its group hold the
// output open.
const execWaitDelay = 2 * time.Second

// Exec runs argv with the run's environment, working dir and credentials,
// as a child of the agent in a process group of its own (in the run's
// cgroup on v2). When ctx ends the whole group is killed and the error
// wraps ctx's.
func (r *Runtime) Exec(ctx context.Context, id runtime.ID, argv []string) ([]byte, int, error) {
	rn, err := r.lookup(id)
	if err != nil {
		return nil, 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	if len(argv) == 0 {
		return nil, 0, fmt.Errorf("exec in %s: no command", id)
	}
	r.mu.Lock()
	c, cgp, state := rn.cfg.Container, rn.cfg.Cgroup, rn.status.State
	r.mu.Unlock()
	if state != runtime.StateRunning {
		return nil, 0, fmt.Errorf("exec in %s: not running", id)
	}
	path, err := lookPath(argv[0], c.Env, c.WorkingDir)
	if err != nil {
		return nil, 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	cmd := osexec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = append([]string{}, c.Env...)
	cmd.Dir = c.WorkingDir
	attr := &syscall.SysProcAttr{Setpgid: true}
	if c.RunAsUser != nil || c.RunAsGroup != nil {
		cred := &syscall.Credential{Uid: uint32(syscall.Getuid()), Gid: uint32(syscall.Getgid())}
		if c.RunAsUser != nil {
			cred.Uid = uint32(*c.RunAsUser)
		}
		if c.RunAsGroup != nil {
			cred.Gid = uint32(*c.RunAsGroup)
		}
		attr.Credential = cred
	}
	if cgp.Version == "v2" {
		if fd, err := unix.Open(cgp.Memory, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			defer unix.Close(fd)
			attr.UseCgroupFD, attr.CgroupFD = true, fd
		}
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = execWaitDelay
	out := &cappedBuffer{max: execOutputMax}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	code := 0
	if cmd.ProcessState != nil {
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		} else {
			code = ws.ExitStatus()
		}
	}
	if ctx.Err() != nil {
		return out.buf.Bytes(), code, fmt.Errorf("exec in %s: %w", id, ctx.Err())
	}
	var exitErr *osexec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, osexec.ErrWaitDelay) {
		return out.buf.Bytes(), code, fmt.Errorf("exec in %s: %w", id, err)
	}
	return out.buf.Bytes(), code, nil
}

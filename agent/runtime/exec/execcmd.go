//go:build linux

package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	osexec "os/exec"
	"syscall"
	"time"

	"github.com/creack/pty"
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
	cmd, release, err := r.command(ctx, id, argv, false)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	out := &cappedBuffer{max: execOutputMax}
	cmd.Stdout, cmd.Stderr = out, out
	code, err := execResult(ctx, id, cmd, cmd.Run())
	return out.buf.Bytes(), code, err
}

// ExecStream runs opts.Argv as Exec does, its standard streams connected
// to opts' or to a terminal of its own. The caller ends opts.Stdin once
// ExecStream has returned (a command that exits while its input is still
// open leaves a read of it waiting).
func (r *Runtime) ExecStream(ctx context.Context, id runtime.ID, opts runtime.ExecOptions) (int, error) {
	cmd, release, err := r.command(ctx, id, opts.Argv, opts.TTY)
	if err != nil {
		return 0, err
	}
	defer release()
	if opts.TTY {
		err = runTerminal(ctx, cmd, opts)
	} else {
		err = runPiped(cmd, opts)
	}
	return execResult(ctx, id, cmd, err)
}

// runPiped runs cmd with its streams connected to opts'.
func runPiped(cmd *osexec.Cmd, opts runtime.ExecOptions) error {
	cmd.Stdout, cmd.Stderr = opts.Stdout, opts.Stderr
	var stdin io.WriteCloser
	if opts.Stdin != nil {
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if stdin != nil {
		go func() {
			_, _ = io.Copy(stdin, opts.Stdin)
			stdin.Close()
		}()
	}
	return cmd.Wait()
}

// runTerminal runs cmd as the session leader of a new terminal: its input
// from opts.Stdin, its output to opts.Stdout, its size from opts.Resize.
func runTerminal(ctx context.Context, cmd *osexec.Cmd, opts runtime.ExecOptions) error {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return fmt.Errorf("open a terminal: %w", err)
	}
	defer ptmx.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// A size already asked for is the terminal's from the start, so that
	// the command never sees it unsized.
	select {
	case sz, ok := <-opts.Resize:
		if ok {
			_ = pty.Setsize(ptmx, &pty.Winsize{Rows: sz.Height, Cols: sz.Width})
		}
	default:
	}
	err = cmd.Start()
	tty.Close()
	if err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		for {
			select {
			case sz, ok := <-opts.Resize:
				if !ok {
					return
				}
				_ = pty.Setsize(ptmx, &pty.Winsize{Rows: sz.Height, Cols: sz.Width})
			case <-exited:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	if opts.Stdin != nil {
		go func() { _, _ = io.Copy(ptmx, opts.Stdin) }()
	}
	out := opts.Stdout
	if out == nil {
		out = io.Discard
	}
	copied := make(chan struct{})
	go func() {
		// Ends with EIO once no process holds the terminal open.
		_, _ = io.Copy(out, ptmx)
		close(copied)
	}()
	err = cmd.Wait()
	close(exited)
	select {
	case <-copied:
	case <-time.After(execWaitDelay):
		// A process that left the session holds the terminal: what it
		// writes from now on is not the command's.
	}
	return err
}

// command is argv as the run's own processes run: its environment,
// working dir and credentials, in a process group of its own (in the
// run's cgroup on v2), the whole group killed when ctx ends. release is
// called once the command has started.
func (r *Runtime) command(ctx context.Context, id runtime.ID, argv []string, tty bool) (*osexec.Cmd, func(), error) {
	rn, err := r.lookup(id)
	if err != nil {
		return nil, nil, fmt.Errorf("exec in %s: %w", id, err)
	}
	if len(argv) == 0 {
		return nil, nil, fmt.Errorf("exec in %s: no command", id)
	}
	r.mu.Lock()
	c, cgp, state := rn.cfg.Container, rn.cfg.Cgroup, rn.status.State
	r.mu.Unlock()
	if state != runtime.StateRunning {
		return nil, nil, fmt.Errorf("exec in %s: not running", id)
	}
	path, err := lookPath(argv[0], c.Env, workingDir(&c))
	if err != nil {
		return nil, nil, fmt.Errorf("exec in %s: %w", id, err)
	}
	cmd := osexec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = append([]string{}, c.Env...)
	if tty {
		cmd.Env = withTerm(cmd.Env)
	}
	cmd.Dir = workingDir(&c)
	// A process group of its own; on a terminal, a session of its own
	// (whose process group is its own too), the terminal (fd 0) its
	// controlling one.
	attr := &syscall.SysProcAttr{Setpgid: !tty, Setsid: tty, Setctty: tty}
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
	release := func() {}
	if cgp.Version == "v2" {
		if fd, err := unix.Open(cgp.Memory, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			release = func() { unix.Close(fd) }
			attr.UseCgroupFD, attr.CgroupFD = true, fd
		}
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = execWaitDelay
	return cmd, release, nil
}

// execResult is the exit code of a command that has run (128 + the signal
// for one killed) and the error to report: none for a command that ran
// and exited, whatever its code.
func execResult(ctx context.Context, id runtime.ID, cmd *osexec.Cmd, err error) (int, error) {
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
		return code, fmt.Errorf("exec in %s: %w", id, ctx.Err())
	}
	var exitErr *osexec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, osexec.ErrWaitDelay) {
		return code, fmt.Errorf("exec in %s: %w", id, err)
	}
	return code, nil
}

//go:build linux

package exec

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/agent/runtime"
)

// slowPoll is how often a process is checked when the kernel offers no
// pidfd to wait on.
const slowPoll = 2 * time.Second

// watch waits, in a goroutine the runtime owns, for the process pid (that
// started at start) to end, then calls finish. pidfd, when not -1, is a
// pidfd of pid the watcher takes over.
func (r *Runtime) watch(rn *run, pid int, start uint64, pidfd int) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if r.waitExit(pid, start, pidfd) {
			r.finish(rn)
		}
	}()
}

// waitExit returns true once the process has ended, false when the runtime
// is closing. It waits on a pidfd, which works for processes that are not
// this one's children, and reaps the process if it is a child.
func (r *Runtime) waitExit(pid int, start uint64, pidfd int) bool {
	if pidfd < 0 {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			if errors.Is(err, unix.ESRCH) {
				return true
			}
			return r.pollExit(pid, start)
		}
		pidfd = fd
		// The pid named the right process when the caller looked; make
		// sure the pidfd does not name a newer one.
		if !alive(pid, start) {
			unix.Close(pidfd)
			reap(pid)
			return true
		}
	}
	defer unix.Close(pidfd)
	fds := []unix.PollFd{
		{Fd: int32(pidfd), Events: unix.POLLIN},
		{Fd: int32(r.stopR.Fd()), Events: unix.POLLIN},
	}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return r.pollExit(pid, start)
		}
		if fds[0].Revents != 0 {
			reapPidfd(pidfd)
			return true
		}
		if fds[1].Revents != 0 {
			return false
		}
	}
}

// pollExit checks the process every slowPoll until it has ended.
func (r *Runtime) pollExit(pid int, start uint64) bool {
	t := r.clk.NewTicker(slowPoll)
	defer t.Stop()
	for alive(pid, start) {
		select {
		case <-t.C():
		case <-r.stop:
			return false
		}
	}
	reap(pid)
	return true
}

// reap collects the exit of pid, known to have ended, if it is a child of
// this process (a shim this process started), so it does not linger as a
// zombie. For any other process wait4 fails at once with ECHILD.
func reap(pid int) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// reapPidfd is reap for a process named by a pidfd, which no newer process
// can have taken. A multithreaded process (the shim) signals its pidfd as
// its main thread exits, possibly before it can be waited for, so the wait
// blocks: briefly, the process is ending.
func reapPidfd(pidfd int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// finish is called when the process watched for rn has ended.
func (r *Runtime) finish(rn *run) {
	st, s := readRun(rn.id, rn.dir)
	if s.State == runtime.StateRunning && alive(st.PID, st.PIDStart) {
		// The shim died and left the container running: watch it instead.
		r.mu.Lock()
		rn.state, rn.status = st, s
		r.mu.Unlock()
		r.watch(rn, st.PID, st.PIDStart, -1)
		return
	}
	if s.State != runtime.StateExited {
		s = lost(s, r.clk.Now())
		r.log.Warn("container ended without an exit record", "id", rn.id.String())
	}
	r.mu.Lock()
	rn.state, rn.status = st, s
	close(rn.done)
	r.mu.Unlock()
	r.notify(rn.id)
}

// notify hands id to the Exited channel, or to the pending list when the
// channel is full (or others wait before it).
func (r *Runtime) notify(id runtime.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		select {
		case r.exited <- id:
			return
		default:
		}
	}
	r.pending = append(r.pending, id)
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// deliver moves pending exits to the Exited channel as it drains.
func (r *Runtime) deliver() {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		var id runtime.ID
		has := len(r.pending) > 0
		if has {
			id = r.pending[0]
		}
		r.mu.Unlock()
		if !has {
			select {
			case <-r.kick:
				continue
			case <-r.stop:
				return
			}
		}
		select {
		case r.exited <- id:
			r.mu.Lock()
			r.pending = r.pending[1:]
			r.mu.Unlock()
		case <-r.stop:
			return
		}
	}
}

//go:build linux

package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/du"
	"github.com/berth-dev/berth/agent/runtime"
)

// exitedBuffer is the capacity of the Exited channel; more exits than this
// wait in a pending list instead of blocking the runtime.
const exitedBuffer = 128

// Runtime runs each container as a host process under a shim. Close stops
// its goroutines, never the containers.
type Runtime struct {
	root string
	log  *slog.Logger
	clk  clock.WithTicker
	cg   cgroups

	mu      sync.Mutex
	runs    map[runtime.ID]*run
	pending []runtime.ID

	exited chan runtime.ID
	kick   chan struct{}
	stop   chan struct{}
	// stopR becomes readable when Close closes stopW, waking the pidfd
	// watchers out of poll.
	stopR, stopW *os.File
	closeOnce    sync.Once
	wg           sync.WaitGroup
}

// run is the runtime's record of one run. Its fields are guarded by
// Runtime.mu; done is closed once the run has ended.
type run struct {
	id     runtime.ID
	dir    string
	cfg    runConfig
	state  runState
	status runtime.Status
	done   chan struct{}
}

var _ runtime.Runtime = (*Runtime)(nil)

// New opens the runtime's state under opts.Root, adopting the runs an
// earlier agent left there: running ones are watched again, ended ones
// report their exit.
func New(opts Options) (*Runtime, error) {
	if opts.Root == "" {
		return nil, errors.New("exec runtime: no root directory")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	// Shims run in their own working directories and read their runs'
	// files by the paths the runtime records: those must not be relative.
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("exec runtime: %w", err)
	}
	opts.Root = root
	if err := os.MkdirAll(opts.Root, 0o755); err != nil {
		return nil, fmt.Errorf("exec runtime: %w", err)
	}
	cg, err := detectCgroups(cgroupMount)
	if err != nil {
		opts.Logger.Info("running containers without cgroups", "reason", err)
	}
	stopR, stopW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec runtime: %w", err)
	}
	r := &Runtime{
		root:   opts.Root,
		log:    opts.Logger,
		clk:    opts.Clock,
		cg:     cg,
		runs:   map[runtime.ID]*run{},
		exited: make(chan runtime.ID, exitedBuffer),
		kick:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		stopR:  stopR,
		stopW:  stopW,
	}
	if err := r.adoptAll(); err != nil {
		r.Close()
		return nil, err
	}
	r.wg.Add(1)
	go r.deliver()
	return r, nil
}

// Close stops the runtime's goroutines and waits for them. The containers
// keep running; a later New on the same Root finds them again.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() {
		close(r.stop)
		r.stopW.Close()
		r.wg.Wait()
		r.stopR.Close()
	})
	return nil
}

// Capabilities says which cgroup version berth writes here, if any.
func (r *Runtime) Capabilities() runtime.Capabilities { return r.cg.capabilities() }

// Exited delivers the ID of each run as it ends.
func (r *Runtime) Exited() <-chan runtime.ID { return r.exited }

// validate checks what Start needs of c.
func validate(c *runtime.Container) error {
	id := c.ID
	for _, s := range []string{id.PodUID, id.Name} {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\x00") {
			return fmt.Errorf("bad container id %q", id)
		}
	}
	if id.Attempt < 0 {
		return fmt.Errorf("bad container id %q: negative attempt", id)
	}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return errors.New("no command")
	}
	return nil
}

// Start starts the run's shim and returns once the container runs or has
// failed to start; a start that fails is recorded as an Exited run with
// reason StartError, and returned as an error.
func (r *Runtime) Start(ctx context.Context, c *runtime.Container) (runtime.Status, error) {
	if err := validate(c); err != nil {
		return runtime.Status{}, fmt.Errorf("start %s: %w", c.ID, err)
	}
	if !shimMainCalled.Load() {
		return runtime.Status{}, fmt.Errorf("start %s: %w", c.ID, errNoShimMain)
	}
	// Once the shim is started the wait for it is short and bounded, so ctx
	// is only checked before anything is made.
	if err := ctx.Err(); err != nil {
		return runtime.Status{}, fmt.Errorf("start %s: %w", c.ID, err)
	}
	id := c.ID
	dir := runDir(r.root, id)
	r.mu.Lock()
	if _, ok := r.runs[id]; ok {
		r.mu.Unlock()
		return runtime.Status{}, fmt.Errorf("start %s: already exists", id)
	}
	rn := &run{id: id, dir: dir, done: make(chan struct{})}
	rn.status = runtime.Status{ID: id, State: runtime.StateUnknown}
	r.runs[id] = rn
	r.mu.Unlock()
	forget := func() {
		r.mu.Lock()
		delete(r.runs, id)
		r.mu.Unlock()
	}

	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		forget()
		return runtime.Status{}, fmt.Errorf("start %s: %w", id, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		forget()
		if errors.Is(err, fs.ErrExist) {
			return runtime.Status{}, fmt.Errorf("start %s: already exists", id)
		}
		return runtime.Status{}, fmt.Errorf("start %s: %w", id, err)
	}
	cgp, err := r.cg.create(id, c.Limits)
	if err != nil {
		forget()
		os.RemoveAll(dir)
		return runtime.Status{}, fmt.Errorf("start %s: %w", id, err)
	}
	rn.cfg = runConfig{Container: *c, Cgroup: cgp, LogMaxBytes: logMaxBytes}
	if err := writeJSON(filepath.Join(dir, configFile), rn.cfg); err != nil {
		forget()
		r.cg.remove(cgp)
		os.RemoveAll(dir)
		return runtime.Status{}, fmt.Errorf("start %s: %w", id, err)
	}

	shimPID, pidfd, err := startShim(dir)
	if err != nil {
		forget()
		r.cg.remove(cgp)
		os.RemoveAll(dir)
		return runtime.Status{}, fmt.Errorf("start %s: %w", id, err)
	}
	st, status := readRun(id, dir)
	if status.State == runtime.StateUnknown {
		// The shim died before recording anything: record the failure.
		msg := "shim exited before the container started"
		if b, _ := os.ReadFile(filepath.Join(dir, shimLog)); len(b) > 0 {
			msg += ": " + strings.TrimSpace(string(b))
		}
		e := runExit{ExitCode: startErrorCode, FinishedAt: r.clk.Now().UTC(), Reason: ReasonStartError, Message: msg}
		if err := writeJSON(filepath.Join(dir, exitFile), e); err != nil {
			r.log.Error("record start failure", "id", id.String(), "err", err)
		}
		st, status = readRun(id, dir)
	}
	if len(st.Warnings) > 0 {
		// The container runs, short of something the shim could not set
		// up: the operator's to know, not the container's status message.
		r.log.Warn("container started with warnings", "id", id.String(), "warnings", strings.Join(st.Warnings, "; "))
	}
	r.mu.Lock()
	rn.state, rn.status = st, status
	r.mu.Unlock()
	shimStart, _ := processStart(shimPID)
	r.watch(rn, shimPID, shimStart, pidfd)
	if status.Reason == ReasonStartError {
		return status, fmt.Errorf("start %s: %s", id, status.Message)
	}
	return status, nil
}

// startShim starts the shim of the run in dir and waits until it has
// started the container or failed to. The wait is bounded by the shim
// itself (it closes the ready pipe as soon as it knows, or dies), so it does
// not take a context.
func startShim(dir string) (pid, pidfd int, err error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return 0, -1, err
	}
	defer readyR.Close()
	logf, err := os.OpenFile(filepath.Join(dir, shimLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		readyW.Close()
		return 0, -1, err
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		readyW.Close()
		return 0, -1, err
	}
	defer devnull.Close()
	pidfd = -1
	proc, err := os.StartProcess("/proc/self/exe", []string{"berth-shim", dir}, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{ShimEnv + "=" + dir},
		Files: []*os.File{devnull, logf, logf, readyW},
		Sys:   &syscall.SysProcAttr{Setsid: true, PidFD: &pidfd},
	})
	readyW.Close()
	if err != nil {
		return 0, -1, fmt.Errorf("start shim: %w", err)
	}
	pid = proc.Pid
	// The runtime watches the shim through its pidfd and reaps it itself.
	_ = proc.Release()
	_, _ = io.Copy(io.Discard, readyR)
	return pid, pidfd, nil
}

// readRun reads what the files of a run say. A run with neither a state nor
// an exit is reported Unknown; whether a started run still runs is for the
// caller to check.
func readRun(id runtime.ID, dir string) (runState, runtime.Status) {
	s := runtime.Status{ID: id, State: runtime.StateUnknown}
	var st runState
	hasState := readJSON(filepath.Join(dir, stateFile), &st) == nil
	if hasState {
		s.State, s.PID, s.StartedAt = runtime.StateRunning, st.PID, st.StartedAt
	}
	var e runExit
	if readJSON(filepath.Join(dir, exitFile), &e) == nil {
		s.State, s.FinishedAt = runtime.StateExited, e.FinishedAt
		s.ExitCode, s.Signal, s.Reason = e.ExitCode, e.Signal, e.Reason
		if e.Message != "" {
			s.Message = e.Message
		}
	}
	return st, s
}

// lost marks s as a run whose processes are gone without an exit record.
func lost(s runtime.Status, now time.Time) runtime.Status {
	s.State, s.ExitCode, s.Signal = runtime.StateUnknown, unknownExitCode, 0
	s.Reason = ReasonUnknown
	s.Message = "the container's processes ended without recording an exit"
	if s.FinishedAt.IsZero() {
		s.FinishedAt = now
	}
	return s
}

func (r *Runtime) lookup(id runtime.ID) (*run, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rn, ok := r.runs[id]
	if !ok {
		return nil, runtime.ErrNotFound
	}
	return rn, nil
}

// Status reports one run.
func (r *Runtime) Status(ctx context.Context, id runtime.ID) (runtime.Status, error) {
	rn, err := r.lookup(id)
	if err != nil {
		return runtime.Status{}, fmt.Errorf("status %s: %w", id, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return rn.status, nil
}

// List reports every run, ordered by ID.
func (r *Runtime) List(ctx context.Context) ([]runtime.Status, error) {
	r.mu.Lock()
	out := make([]runtime.Status, 0, len(r.runs))
	for _, rn := range r.runs {
		out = append(out, rn.status)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].ID, out[j].ID
		if a.PodUID != b.PodUID {
			return a.PodUID < b.PodUID
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Attempt < b.Attempt
	})
	return out, nil
}

// signalGroup sends sig to the run's process group, and on SIGKILL to
// whatever is left in its cgroup, if the container is still the process
// recorded (its pid not reused).
func (r *Runtime) signalGroup(rn *run, sig syscall.Signal) error {
	r.mu.Lock()
	st, cgp := rn.state, rn.cfg.Cgroup
	r.mu.Unlock()
	if alive(st.PID, st.PIDStart) {
		if err := syscall.Kill(-st.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
	}
	if sig == syscall.SIGKILL {
		cgp.killAll()
	}
	return nil
}

// Stop sends SIGTERM to the run's process group, SIGKILL once grace has
// passed on the runtime's clock, and returns when the run has ended.
func (r *Runtime) Stop(ctx context.Context, id runtime.ID, grace time.Duration) error {
	rn, err := r.lookup(id)
	if err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	select {
	case <-rn.done:
		return nil
	default:
	}
	sig := syscall.SIGTERM
	if grace <= 0 {
		sig = syscall.SIGKILL
	}
	if err := r.signalGroup(rn, sig); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	// wait waits for the group to exit, or for timeout (nil: none) to fire
	// first, which it reports.
	wait := func(timeout <-chan time.Time) (timedOut bool, err error) {
		select {
		case <-rn.done:
			return false, nil
		case <-ctx.Done():
			return false, fmt.Errorf("stop %s: %w", id, ctx.Err())
		case <-r.stop:
			return false, fmt.Errorf("stop %s: %w", id, errClosed)
		case <-timeout:
			return true, nil
		}
	}
	if sig == syscall.SIGTERM {
		t := r.clk.NewTimer(grace)
		defer t.Stop()
		if timedOut, err := wait(t.C()); !timedOut {
			return err
		}
		if err := r.signalGroup(rn, syscall.SIGKILL); err != nil {
			return fmt.Errorf("stop %s: %w", id, err)
		}
	}
	_, err = wait(nil)
	return err
}

// errClosed: the runtime was closed, so it no longer watches its runs.
var errClosed = errors.New("runtime closed")

// Remove deletes an ended run: its cgroup, its files, and the directories
// above it that it leaves empty.
func (r *Runtime) Remove(ctx context.Context, id runtime.ID) error {
	rn, err := r.lookup(id)
	if err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	select {
	case <-rn.done:
	default:
		return fmt.Errorf("remove %s: still running", id)
	}
	if err := r.cg.remove(rn.cfg.Cgroup); err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	if err := os.RemoveAll(rn.dir); err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	// Emptied parents go too; a directory still in use stays (os.Remove
	// removes only empty ones).
	name := filepath.Dir(rn.dir)
	containers := filepath.Dir(name)
	for _, d := range []string{name, containers, filepath.Dir(containers)} {
		if os.Remove(d) != nil {
			break
		}
	}
	r.mu.Lock()
	delete(r.runs, id)
	r.mu.Unlock()
	return nil
}

// Logs writes the run's output to w.
func (r *Runtime) Logs(ctx context.Context, id runtime.ID, opts runtime.LogOptions, w io.Writer) error {
	rn, err := r.lookup(id)
	if err != nil {
		return fmt.Errorf("logs %s: %w", id, err)
	}
	if err := writeLogs(ctx, r.clk, rn.dir, opts, rn.done, w); err != nil {
		return fmt.Errorf("logs %s: %w", id, err)
	}
	return nil
}

// DiskUsage is what the run's directory takes on disk: its log files and
// records, a handful of files.
func (r *Runtime) DiskUsage(ctx context.Context, id runtime.ID) (int64, error) {
	rn, err := r.lookup(id)
	if err != nil {
		return 0, fmt.Errorf("disk usage %s: %w", id, err)
	}
	u, err := du.Walk(rn.dir, 0)
	if err != nil {
		return 0, fmt.Errorf("disk usage %s: %w", id, err)
	}
	return u.Bytes, nil
}

// Stats reports what a running run uses: from its cgroup when it has one,
// else summed over its process group.
func (r *Runtime) Stats(ctx context.Context, id runtime.ID) (runtime.Stats, error) {
	rn, err := r.lookup(id)
	if err != nil {
		return runtime.Stats{}, fmt.Errorf("stats %s: %w", id, err)
	}
	r.mu.Lock()
	st, cgp, state := rn.state, rn.cfg.Cgroup, rn.status.State
	r.mu.Unlock()
	if state != runtime.StateRunning {
		return runtime.Stats{}, fmt.Errorf("stats %s: not running", id)
	}
	var s runtime.Stats
	cpuOK := false
	if cgp.Version != "" {
		mem, cpu, ok, err := cgp.stats()
		if err != nil {
			return runtime.Stats{}, fmt.Errorf("stats %s: %w", id, err)
		}
		s.MemoryBytes, s.CPUNanos, cpuOK = mem, cpu, ok
	}
	if cgp.Version == "" || !cpuOK {
		cpu, rss, err := groupUsage(st.PID)
		if err != nil {
			return runtime.Stats{}, fmt.Errorf("stats %s: %w", id, err)
		}
		s.CPUNanos = cpu
		if cgp.Version != "v2" {
			s.MemoryBytes = max(s.MemoryBytes, rss)
		}
	}
	return s, nil
}

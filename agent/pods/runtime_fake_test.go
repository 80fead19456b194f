package pods

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/runtime"
)

// fakeRuntime is an in-memory runtime.Runtime on a fake clock: its runs are
// fake processes whose exits the test triggers. It keeps the interface's
// semantics: IDs are new per Start, exits are delivered on Exited, Stop
// sends "SIGTERM" and "SIGKILL"s after grace, Remove only forgets exited
// runs.
type fakeRuntime struct {
	clk    clock.Clock
	exited chan runtime.ID

	mu     sync.Mutex
	runs   map[runtime.ID]*fakeRun
	starts []runtime.Container
	stops  []fakeStop
	execs  []fakeExec
	pid    int
	// exec answers Exec; nil answers exit 0.
	exec func(id runtime.ID, argv []string) ([]byte, int, error)
	// ignoreTerm makes new runs ignore SIGTERM, so Stop waits for grace.
	ignoreTerm bool
}

type fakeRun struct {
	c          runtime.Container
	st         runtime.Status
	done       chan struct{}
	ignoreTerm bool
	memory     int64
	// disk is what DiskUsage reports.
	disk int64
}

type fakeStop struct {
	id    runtime.ID
	grace time.Duration
}

type fakeExec struct {
	id   runtime.ID
	argv []string
}

var _ runtime.Runtime = (*fakeRuntime)(nil)

func newFakeRuntime(clk clock.Clock) *fakeRuntime {
	return &fakeRuntime{clk: clk, exited: make(chan runtime.ID, 1024), runs: map[runtime.ID]*fakeRun{}}
}

func (f *fakeRuntime) Start(_ context.Context, c *runtime.Container) (runtime.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.runs[c.ID]; ok {
		return runtime.Status{}, fmt.Errorf("start %s: id already used", c.ID)
	}
	f.pid++
	r := &fakeRun{c: *c, done: make(chan struct{}), ignoreTerm: f.ignoreTerm,
		st: runtime.Status{ID: c.ID, State: runtime.StateRunning, PID: 1000 + f.pid, StartedAt: f.clk.Now()}}
	f.runs[c.ID] = r
	f.starts = append(f.starts, *c)
	if len(c.Argv) > 0 && c.Argv[0] == missingExecutable {
		// As the exec runtime records a process it could not start.
		r.st = runtime.Status{ID: c.ID, State: runtime.StateExited, ExitCode: 128, Reason: "StartError",
			Message: "exec " + missingExecutable + ": no such file or directory", FinishedAt: f.clk.Now()}
		close(r.done)
		return r.st, fmt.Errorf("start %s: %s", c.ID, r.st.Message)
	}
	return r.st, nil
}

// missingExecutable is a command the fake runtime cannot start.
const missingExecutable = "/no/such/binary"

// exit ends a running run as if its process exited (signal 0) or was
// killed by signal.
func (f *fakeRuntime) exit(id runtime.ID, code, signal int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exitLocked(id, code, signal)
}

func (f *fakeRuntime) exitLocked(id runtime.ID, code, signal int) error {
	r, ok := f.runs[id]
	if !ok {
		return runtime.ErrNotFound
	}
	if r.st.State != runtime.StateRunning {
		return fmt.Errorf("%s is not running", id)
	}
	r.st.State = runtime.StateExited
	r.st.FinishedAt = f.clk.Now()
	r.st.ExitCode, r.st.Signal = code, signal
	r.st.Reason = "Error"
	if code == 0 {
		r.st.Reason = "Completed"
	}
	close(r.done)
	f.exited <- id
	return nil
}

func (f *fakeRuntime) Stop(ctx context.Context, id runtime.ID, grace time.Duration) error {
	f.mu.Lock()
	r, ok := f.runs[id]
	if !ok {
		f.mu.Unlock()
		return runtime.ErrNotFound
	}
	f.stops = append(f.stops, fakeStop{id, grace})
	if r.st.State != runtime.StateRunning {
		f.mu.Unlock()
		return nil
	}
	if !r.ignoreTerm {
		err := f.exitLocked(id, 143, 15)
		f.mu.Unlock()
		return err
	}
	f.mu.Unlock()
	t := f.clk.NewTimer(grace)
	defer t.Stop()
	select {
	case <-r.done:
		return nil
	case <-t.C():
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.st.State == runtime.StateRunning {
			return f.exitLocked(id, 137, 9)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeRuntime) Status(_ context.Context, id runtime.ID) (runtime.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return runtime.Status{}, runtime.ErrNotFound
	}
	return r.st, nil
}

func (f *fakeRuntime) List(context.Context) ([]runtime.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]runtime.Status, 0, len(f.runs))
	for _, r := range f.runs {
		out = append(out, r.st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID.String() < out[j].ID.String() })
	return out, nil
}

func (f *fakeRuntime) Remove(_ context.Context, id runtime.ID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return runtime.ErrNotFound
	}
	if r.st.State == runtime.StateRunning {
		return fmt.Errorf("remove %s: still running", id)
	}
	delete(f.runs, id)
	return nil
}

func (f *fakeRuntime) Exec(ctx context.Context, id runtime.ID, argv []string) ([]byte, int, error) {
	f.mu.Lock()
	r, ok := f.runs[id]
	exec := f.exec
	if ok {
		f.execs = append(f.execs, fakeExec{id, argv})
	}
	f.mu.Unlock()
	if !ok {
		return nil, 0, runtime.ErrNotFound
	}
	if r.st.State != runtime.StateRunning {
		return nil, 0, fmt.Errorf("exec in %s: not running", id)
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if exec == nil {
		return nil, 0, nil
	}
	return exec(id, argv)
}

// ExecStream runs the fake exec and writes its output to Stdout.
func (f *fakeRuntime) ExecStream(ctx context.Context, id runtime.ID, opts runtime.ExecOptions) (int, error) {
	out, code, err := f.Exec(ctx, id, opts.Argv)
	if err == nil && opts.Stdout != nil {
		_, err = opts.Stdout.Write(out)
	}
	return code, err
}

// Attach has the fake process write its log once to Stdout and end, as a
// process that has written that and exited would.
func (f *fakeRuntime) Attach(ctx context.Context, id runtime.ID, opts runtime.AttachOptions) error {
	st, err := f.Status(ctx, id)
	if err != nil {
		return err
	}
	if st.State != runtime.StateRunning {
		return fmt.Errorf("attach %s: not running", id)
	}
	if opts.Stdout == nil {
		return nil
	}
	_, err = fmt.Fprintf(opts.Stdout, "output of %s\n", id)
	return err
}

func (f *fakeRuntime) Logs(_ context.Context, id runtime.ID, _ runtime.LogOptions, w io.Writer) error {
	if _, err := f.Status(context.Background(), id); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "output of %s\n", id)
	return err
}

func (f *fakeRuntime) Stats(_ context.Context, id runtime.ID) (runtime.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return runtime.Stats{}, runtime.ErrNotFound
	}
	if r.st.State != runtime.StateRunning {
		return runtime.Stats{}, errors.New("not running")
	}
	return runtime.Stats{MemoryBytes: r.memory}, nil
}

func (f *fakeRuntime) DiskUsage(_ context.Context, id runtime.ID) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return 0, runtime.ErrNotFound
	}
	return r.disk, nil
}

func (f *fakeRuntime) Exited() <-chan runtime.ID { return f.exited }

func (f *fakeRuntime) Capabilities() runtime.Capabilities { return runtime.Capabilities{} }

// run returns a copy of a run's status and whether it exists.
func (f *fakeRuntime) run(id runtime.ID) (runtime.Status, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return runtime.Status{}, false
	}
	return r.st, true
}

func (f *fakeRuntime) startsOf(uid string) []runtime.Container {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []runtime.Container
	for _, c := range f.starts {
		if c.ID.PodUID == uid {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeRuntime) setExec(fn func(id runtime.ID, argv []string) ([]byte, int, error)) {
	f.mu.Lock()
	f.exec = fn
	f.mu.Unlock()
}

func (f *fakeRuntime) setMemory(id runtime.ID, n int64) {
	f.mu.Lock()
	f.runs[id].memory = n
	f.mu.Unlock()
}

func (f *fakeRuntime) setDisk(id runtime.ID, n int64) {
	f.mu.Lock()
	f.runs[id].disk = n
	f.mu.Unlock()
}

func (f *fakeRuntime) stopsOf(id runtime.ID) []fakeStop {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeStop
	for _, s := range f.stops {
		if s.id == id {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeRuntime) execsOf(id runtime.ID) []fakeExec {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeExec
	for _, e := range f.execs {
		if e.id == id {
			out = append(out, e)
		}
	}
	return out
}

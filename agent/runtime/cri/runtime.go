package cri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/runtime"
)

// Defaults of Options.
const (
	// DefaultPollPeriod is how often the runtime lists containers to see
	// which exited: containerd 1.6 has no container events.
	DefaultPollPeriod = time.Second
	// DefaultConnectTimeout bounds each CRI call that has no deadline of
	// its own.
	DefaultConnectTimeout = 2 * time.Minute
	// connectRetry is how often New asks a runtime that is not ready yet.
	connectRetry = 200 * time.Millisecond
)

// Options configure a Runtime.
type Options struct {
	// Endpoint is the CRI socket, unix:///path or a bare path.
	Endpoint string
	// PollPeriod is how often exits are looked for (DefaultPollPeriod).
	PollPeriod time.Duration
	// Timeout bounds a CRI call (DefaultConnectTimeout); pulls may take
	// longer and are bounded by their context alone.
	Timeout time.Duration
	Clock   clock.WithTicker
	Logger  *slog.Logger
}

// Runtime is a runtime.PodRuntime over a CRI runtime service.
type Runtime struct {
	o      Options
	rs     internalapi.RuntimeService
	is     internalapi.ImageManagerService
	exited chan runtime.ID
	// version is the runtime's, as a Node reports it.
	version string
	// scheme is the runtime's name, as a containerID begins with it
	// (containerd://ID).
	scheme string
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// runs maps a run to its CRI container and what was last read of it:
	// a run that exited never changes, so it is read once.
	runs map[runtime.ID]*run
	// byCRI is runs by CRI container ID.
	byCRI map[string]*run
	// pods holds, by pod UID, the sandbox the pod's containers go in.
	pods map[string]*sandbox
	// podLocks serialise the making of a pod's sandbox.
	podLocks map[string]*sync.Mutex

	// lister is held by the one List call that lists for a round;
	// nextList is the round the List calls made meanwhile wait for
	// (under mu).
	lister   chan struct{}
	nextList *listRound
}

// listRound is one ListContainers shared by every List call made before
// it began: each pod worker lists at each of its syncs, and 100 pods
// starting at once would otherwise ask the runtime for every container
// 100 times over, as the kubelet avoids with one relist for its pod
// workers (PLEG).
type listRound struct {
	done chan struct{}
	// joined counts the calls sharing the round (under Runtime.mu).
	joined int
	out    []runtime.Status
	err    error
}

type run struct {
	criID  string
	status runtime.Status
	// logPath is the CRI log file of the run.
	logPath string
	// full: status was read with ContainerStatus (not just listed).
	full bool
}

type sandbox struct {
	id     string
	config *runtimeapi.PodSandboxConfig
	ips    []string
}

// New connects to the CRI runtime at o.Endpoint and starts watching for
// exits. Close ends that.
func New(ctx context.Context, o Options) (*Runtime, error) {
	if o.Endpoint == "" {
		return nil, errors.New("cri: no endpoint")
	}
	if o.PollPeriod <= 0 {
		o.PollPeriod = DefaultPollPeriod
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultConnectTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// A containerd just started answers on its socket before its CRI
	// plugin has loaded what it runs ("server is not initialized yet"):
	// ask again until ctx ends.
	var rs internalapi.RuntimeService
	var err error
	t := o.Clock.NewTicker(connectRetry)
	defer t.Stop()
	for {
		rs, err = remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(o.Endpoint).WithConnectionTimeout(o.Timeout).WithTracerProvider(nil).Build(ctx)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cri runtime service %s: %w", o.Endpoint, err)
		case <-t.C():
		}
	}
	is, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(o.Endpoint).WithConnectionTimeout(o.Timeout).WithTracerProvider(nil).Build(ctx)
	if err != nil {
		rs.Close(ctx)
		return nil, fmt.Errorf("cri image service %s: %w", o.Endpoint, err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{
		o: o, rs: rs, is: is,
		exited:   make(chan runtime.ID, 256),
		cancel:   cancel,
		done:     make(chan struct{}),
		runs:     map[runtime.ID]*run{},
		byCRI:    map[string]*run{},
		pods:     map[string]*sandbox{},
		podLocks: map[string]*sync.Mutex{},
		lister:   make(chan struct{}, 1),
		scheme:   "cri",
	}
	if v, err := rs.Version(ctx, "v1"); err == nil {
		r.version = v.RuntimeName + "://" + v.RuntimeVersion
		if v.RuntimeName != "" {
			r.scheme = v.RuntimeName
		}
	}
	if _, err := r.List(ctx); err != nil {
		cancel()
		r.closeServices()
		return nil, err
	}
	go r.watch(wctx)
	return r, nil
}

// Close stops watching for exits and closes the connection; containers
// and sandboxes keep running.
func (r *Runtime) Close() error {
	r.cancel()
	<-r.done
	r.closeServices()
	return nil
}

func (r *Runtime) closeServices() {
	ctx := context.Background()
	r.rs.Close(ctx)
	r.is.Close(ctx)
}

// Exited implements runtime.Runtime.
func (r *Runtime) Exited() <-chan runtime.ID { return r.exited }

// Capabilities implements runtime.Runtime: the CRI runtime applies the
// limits it is given in its cgroups.
func (r *Runtime) Capabilities() runtime.Capabilities {
	cg := "v1"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cg = "v2"
	}
	return runtime.Capabilities{Version: r.version, Cgroup: cg, MemoryLimit: true, CPULimit: true}
}

// watch lists the containers every PollPeriod and reports the runs that
// exited since the last listing.
func (r *Runtime) watch(ctx context.Context) {
	defer close(r.done)
	t := r.o.Clock.NewTicker(r.o.PollPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if _, err := r.List(ctx); err != nil && ctx.Err() == nil {
			r.o.Logger.Warn("cri: list containers", "err", err)
		}
	}
}

// List implements runtime.Runtime from ListContainers: every container
// berth made, found again after a restart of the agent. Calls made while
// a listing is under way share the next one, which begins after them all
// and so sees what each of them did before it called.
func (r *Runtime) List(ctx context.Context) ([]runtime.Status, error) {
	for {
		r.mu.Lock()
		round := r.nextList
		if round == nil {
			round = &listRound{done: make(chan struct{})}
			r.nextList = round
		}
		round.joined++
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-round.done:
		case r.lister <- struct{}{}:
			r.mu.Lock()
			if r.nextList == round {
				// This call lists for the round: calls from now on wait
				// for the next one.
				r.nextList = nil
				r.mu.Unlock()
				round.out, round.err = r.list(ctx)
				close(round.done)
			} else {
				r.mu.Unlock()
			}
			<-r.lister
			<-round.done
		}
		// A round that failed only because the call that listed for it
		// gave up is not this call's failure: it lists again.
		if round.err != nil && ctx.Err() == nil && (errors.Is(round.err, context.Canceled) || errors.Is(round.err, context.DeadlineExceeded)) {
			continue
		}
		// Each call's own slice: callers may append to it.
		return slices.Clone(round.out), round.err
	}
}

// list is one ListContainers, and a ContainerStatus of each container
// that changed since it was last read.
func (r *Runtime) list(ctx context.Context) ([]runtime.Status, error) {
	cs, err := r.rs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{labelManaged: "true"}})
	if err != nil {
		return nil, fmt.Errorf("cri: list containers: %w", err)
	}
	seen := make(map[string]bool, len(cs))
	var out []runtime.Status
	var exits []runtime.ID
	for _, c := range cs {
		id, ok := runID(c.Labels, c.Annotations, c.Metadata)
		if !ok {
			continue
		}
		seen[c.Id] = true
		r.mu.Lock()
		cur := r.byCRI[c.Id]
		r.mu.Unlock()
		if cur != nil && cur.full && stateOf(c.State) == cur.status.State && cur.status.State != runtime.StateRunning {
			out = append(out, cur.status)
			continue
		}
		if cur != nil && cur.full && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING && cur.status.State == runtime.StateRunning {
			out = append(out, cur.status)
			continue
		}
		nr, err := r.read(ctx, id, c.Id)
		if err != nil {
			if isNotFound(err) {
				continue // removed since the listing
			}
			return nil, err
		}
		if cur != nil && cur.status.State == runtime.StateRunning && nr.status.State != runtime.StateRunning {
			exits = append(exits, id)
		}
		out = append(out, nr.status)
	}
	r.mu.Lock()
	for cid, rn := range r.byCRI {
		if !seen[cid] {
			delete(r.byCRI, cid)
			if r.runs[rn.status.ID] == rn {
				delete(r.runs, rn.status.ID)
			}
		}
	}
	r.mu.Unlock()
	for _, id := range exits {
		select {
		case r.exited <- id:
		default:
		}
	}
	return out, nil
}

// read reads one container's status and records it.
func (r *Runtime) read(ctx context.Context, id runtime.ID, criID string) (*run, error) {
	resp, err := r.rs.ContainerStatus(ctx, criID, false)
	if err != nil {
		return nil, err
	}
	s := resp.GetStatus()
	if s == nil {
		return nil, fmt.Errorf("cri: container %s: no status", criID)
	}
	nr := &run{criID: criID, logPath: s.LogPath, full: true, status: statusOf(id, s)}
	nr.status.RuntimeID = r.scheme + "://" + criID
	if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		if m := terminationMessage(s); m != "" {
			nr.status.Message = m
		}
	}
	r.mu.Lock()
	r.byCRI[criID] = nr
	// Of two containers of one run (a create whose start failed, then
	// the retry), the one created last stands for it.
	if old := r.runs[id]; old == nil || old.criID == criID || old.status.StartedAt.Before(nr.status.StartedAt) || old.status.State != runtime.StateRunning {
		r.runs[id] = nr
	}
	r.mu.Unlock()
	return nr, nil
}

func stateOf(s runtimeapi.ContainerState) runtime.State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return runtime.StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED, runtimeapi.ContainerState_CONTAINER_CREATED:
		return runtime.StateExited
	}
	return runtime.StateUnknown
}

// statusOf maps a CRI container status to a run's, as the kubelet reads
// it: a container created but never started ended before it began.
func statusOf(id runtime.ID, s *runtimeapi.ContainerStatus) runtime.Status {
	st := runtime.Status{ID: id, State: stateOf(s.State), Reason: s.Reason, Message: s.Message}
	if s.StartedAt > 0 {
		st.StartedAt = time.Unix(0, s.StartedAt)
	}
	if s.FinishedAt > 0 {
		st.FinishedAt = time.Unix(0, s.FinishedAt)
	}
	switch s.State {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		st.ExitCode, st.Reason = 128, "StartError"
		if st.Message == "" {
			st.Message = "the container was created but not started"
		}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		st.ExitCode = int(s.ExitCode)
		if st.ExitCode > 128 && st.ExitCode < 128+65 {
			st.Signal = st.ExitCode - 128
		}
		if st.Reason == "" {
			st.Reason = "Error"
			if st.ExitCode == 0 {
				st.Reason = "Completed"
			}
		}
	case runtimeapi.ContainerState_CONTAINER_UNKNOWN:
		st.Reason = "ContainerStatusUnknown"
	}
	return st
}

func isNotFound(err error) bool {
	return status.Code(err) == codes.NotFound || errors.Is(err, runtime.ErrNotFound)
}

// lookup is the run's record, read again unless it has exited; ErrNotFound
// for a run the runtime does not have.
func (r *Runtime) lookup(ctx context.Context, id runtime.ID) (*run, error) {
	r.mu.Lock()
	rn := r.runs[id]
	r.mu.Unlock()
	if rn == nil {
		if _, err := r.List(ctx); err != nil {
			return nil, err
		}
		r.mu.Lock()
		rn = r.runs[id]
		r.mu.Unlock()
		if rn == nil {
			return nil, fmt.Errorf("%s: %w", id, runtime.ErrNotFound)
		}
	}
	if rn.status.State == runtime.StateExited {
		return rn, nil
	}
	nr, err := r.read(ctx, id, rn.criID)
	if isNotFound(err) {
		return nil, fmt.Errorf("%s: %w", id, runtime.ErrNotFound)
	}
	return nr, err
}

// Status implements runtime.Runtime.
func (r *Runtime) Status(ctx context.Context, id runtime.ID) (runtime.Status, error) {
	rn, err := r.lookup(ctx, id)
	if err != nil {
		return runtime.Status{ID: id}, err
	}
	return rn.status, nil
}

// Stop implements runtime.Runtime: StopContainer with the grace in whole
// seconds (rounded up), as the CRI takes it.
func (r *Runtime) Stop(ctx context.Context, id runtime.ID, grace time.Duration) error {
	rn, err := r.lookup(ctx, id)
	if err != nil {
		return err
	}
	if rn.status.State == runtime.StateExited {
		return nil
	}
	secs := int64((grace + time.Second - 1) / time.Second)
	if err := r.rs.StopContainer(ctx, rn.criID, secs); err != nil && !isNotFound(err) {
		return fmt.Errorf("cri: stop %s: %w", id, err)
	}
	_, err = r.read(ctx, id, rn.criID)
	if err != nil && !isNotFound(err) {
		return err
	}
	select {
	case r.exited <- id:
	default:
	}
	return nil
}

// Remove implements runtime.Runtime.
func (r *Runtime) Remove(ctx context.Context, id runtime.ID) error {
	rn, err := r.lookup(ctx, id)
	if err != nil {
		return err
	}
	if err := r.rs.RemoveContainer(ctx, rn.criID); err != nil && !isNotFound(err) {
		return fmt.Errorf("cri: remove %s: %w", id, err)
	}
	r.mu.Lock()
	delete(r.byCRI, rn.criID)
	if r.runs[id] == rn {
		delete(r.runs, id)
	}
	r.mu.Unlock()
	return nil
}

// Stats implements runtime.Runtime from ContainerStats.
func (r *Runtime) Stats(ctx context.Context, id runtime.ID) (runtime.Stats, error) {
	rn, err := r.lookup(ctx, id)
	if err != nil {
		return runtime.Stats{}, err
	}
	s, err := r.rs.ContainerStats(ctx, rn.criID)
	if err != nil {
		return runtime.Stats{}, fmt.Errorf("cri: stats %s: %w", id, err)
	}
	var st runtime.Stats
	if m := s.GetMemory(); m != nil && m.WorkingSetBytes != nil {
		st.MemoryBytes = int64(m.WorkingSetBytes.Value)
	}
	if c := s.GetCpu(); c != nil && c.UsageCoreNanoSeconds != nil {
		st.CPUNanos = int64(c.UsageCoreNanoSeconds.Value)
	}
	return st, nil
}

// DiskUsage implements runtime.Runtime: the run's log and, while the
// runtime reports it, its writable layer.
func (r *Runtime) DiskUsage(ctx context.Context, id runtime.ID) (int64, error) {
	rn, err := r.lookup(ctx, id)
	if err != nil {
		return 0, err
	}
	var n int64
	if fi, err := os.Stat(rn.logPath); err == nil {
		n += fi.Size()
	}
	if rn.status.State == runtime.StateRunning {
		if s, err := r.rs.ContainerStats(ctx, rn.criID); err == nil && s.GetWritableLayer() != nil && s.GetWritableLayer().UsedBytes != nil {
			n += int64(s.GetWritableLayer().UsedBytes.Value)
		}
	}
	return n, nil
}
